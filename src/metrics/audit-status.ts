/**
 * The completeness audit as `status` and `/metrics` show it: the last runs, the estimate and its
 * interval per stratum, the drift per day, and the gauges read from them.
 */
import type { Kysely } from 'kysely';
import { Counter, type Registry } from 'prom-client';
import { type CompletenessEstimate, estimateCompleteness } from '../audit/completeness-interval.ts';
import { estimateStratum } from '../audit/stratum-estimate.ts';
import {
  type AuditDriftDay,
  type AuditRunRow,
  type AuditTotals,
  auditDriftPerDay,
  auditTotalsSince,
  readLastAudit,
  stratumSample,
} from '../warehouse/audits.ts';
import type { Database } from '../warehouse/database.ts';
import { heartbeatStopped } from '../warehouse/run-heartbeats.ts';
import { oncePerScrape, readAtScrape, scrapedGauge } from './scraped-metrics.ts';

/**
 * The completeness audit as `status`, `status --json` (`orgs[].audit`), `/metrics` and the HTML report
 * show it: the last run with its estimate, the scheduled audit's estimate per stratum over the last
 * `audit.estimateDays`, what the runs found over the last day, week and all time, and the drift found
 * per day. Reads the run rows and, for the estimate and the days, the cells of the span (indexed by
 * org, stratum and time): what the audit's own rate put there, whatever the size of the warehouse. Why
 * and how: src/audit/README.md.
 */
export interface AuditStatus {
  /**
   * The newest run, with its state: done; running; or interrupted (its command stopped before the last
   * cell, or its holder's heartbeat stopped over a minute ago: src/warehouse/run-heartbeats.ts).
   */
  lastRun:
    | (AuditRunRow & { estimate: CompletenessEstimate | null; state: 'done' | 'running' | 'interrupted' })
    | null;
  /**
   * The scheduled audit's estimate of the share of complete cells, per stratum (recent: the last 30
   * days; history: older windows), over the cells it audited in the last `sinceDays` days (each cell by
   * its first judged audit: src/audit/stratum-estimate.ts), scaled to the newest tick's stratum
   * populations. Null when no cell of the stratum was judged.
   */
  completeness: {
    sinceDays: number;
    recent: CompletenessEstimate | null;
    history: CompletenessEstimate | null;
    /**
     * Cells drawn in the span that no sync had covered yet, per stratum (not judged: a cell still to be
     * synced is not drift). Many on a first start; they turn into judged cells as the sync goes on.
     */
    notYetSynced: { recent: number; history: number };
  };
  last24h: AuditTotals;
  last7d: AuditTotals;
  allTime: AuditTotals;
  /** Cells audited and drift found per UTC day over the last 7 days, newest first. */
  driftPerDay: AuditDriftDay[];
}

const DAY_MS = 86_400_000;

export async function readAuditStatus(
  db: Kysely<Database>,
  orgId: string,
  now: Date,
  estimateDays: number,
): Promise<AuditStatus> {
  const last = await readLastAudit(db, orgId);
  const lastTick = last?.kind === 'schedule' ? last : await readLastAudit(db, orgId, 'schedule');
  const since = new Date(now.getTime() - estimateDays * DAY_MS);
  const recent = await stratumSample(db, orgId, 'recent', since);
  const history = await stratumSample(db, orgId, 'history', since);
  const strata = lastTick?.strata ?? { recent: 0, history: 0 };
  return {
    lastRun: last
      ? {
          ...last,
          state: auditRunState(last, now),
          // A tick draws per stratum, not uniformly: its estimate is the strata's, below.
          estimate:
            last.kind === 'command'
              ? estimateCompleteness(
                  last.totals.cells.complete,
                  last.totals.cells.complete + last.totals.cells.drift,
                  last.population,
                )
              : null,
        }
      : null,
    completeness: {
      sinceDays: estimateDays,
      recent: estimateStratum(recent, strata.recent),
      history: estimateStratum(history, strata.history),
      notYetSynced: { recent: recent.unsynced, history: history.unsynced },
    },
    last24h: await auditTotalsSince(db, orgId, new Date(now.getTime() - DAY_MS)),
    last7d: await auditTotalsSince(db, orgId, new Date(now.getTime() - 7 * DAY_MS)),
    allTime: await auditTotalsSince(db, orgId),
    driftPerDay: await auditDriftPerDay(db, orgId, new Date(now.getTime() - 7 * DAY_MS)),
  };
}

/** A run's state as status shows it: an unfinished run whose holder stopped beating is interrupted. */
function auditRunState(run: AuditRunRow, now: Date): 'done' | 'running' | 'interrupted' {
  if (run.interrupted) return 'interrupted';
  if (run.endedAt) return 'done';
  return heartbeatStopped({ heartbeatAt: run.heartbeatAt, startedAt: run.startedAt }, now)
    ? 'interrupted'
    : 'running';
}

/**
 * The completeness audit's Prometheus metrics (src/audit/README.md), read at scrape time from the audit's
 * tables through `source` (once per scrape for all of them). They are facts of the warehouse, the same
 * for every replica: one replica of a fleet exports them (`fleetReporter`), so a sum over replicas does
 * not multiply them.
 *
 * - `validic_sync_audit_cells_total{org,outcome}`: cells audited (complete, drift, failed), all runs, and
 *   a tick's cells drawn before any sync covered their days (unsynced: not fetched, not judged).
 * - `validic_sync_audit_records_total{org,outcome}`: records compared (equal, missing, stale, extra) and
 *   repaired.
 * - `validic_sync_audit_completeness_ratio{org,stratum,bound}`: the scheduled audit's estimate of the
 *   share of complete cells (recent, history) with its 95 % interval (estimate, lower, upper).
 * - `validic_sync_audit_last_run_timestamp_seconds{org,kind}`: when the newest run started.
 */
export interface AuditMetricsRow {
  orgId: string;
  allTime: AuditTotals;
  completeness: { recent: CompletenessEstimate | null; history: CompletenessEstimate | null };
  lastRun: { startedAt: string; kind: string } | null;
}

export function registerAuditMetrics(
  registry: Registry,
  source: () => Promise<AuditMetricsRow[] | undefined>,
  fleetReporter: () => Promise<boolean | undefined>,
): void {
  const read = oncePerScrape(source);
  const rows = async () => ((await fleetReporter()) ? ((await read()) ?? []) : []);
  // Cells and records, each by outcome: the audit's totals, which its tables keep.
  for (const [name, help, counted] of [
    [
      'validic_sync_audit_cells_total',
      'Cells (user × resource × ≤ 30-day window) the completeness audit compared with the platform, per org and outcome (complete, drift, failed; unsynced: drawn by a tick before any sync covered its days, not judged)',
      'cells',
    ],
    [
      'validic_sync_audit_records_total',
      'Records the completeness audit compared, per org and outcome (equal, missing, stale, extra), and those it repaired (repaired)',
      'records',
    ],
  ] as const)
    new Counter({
      name,
      help,
      labelNames: ['org', 'outcome'],
      registers: [registry],
      ...readAtScrape<Counter>(async (counter) => {
        for (const r of await rows())
          for (const [outcome, n] of Object.entries(r.allTime[counted]))
            counter.inc({ org: r.orgId, outcome }, n);
      }),
    });
  scrapedGauge(
    registry,
    'validic_sync_audit_completeness_ratio',
    "The scheduled audit's estimate of the share of cells whose warehouse copy equals the platform, per org and stratum (recent: the last 30 days; history: older), with its 95 % interval (bound: estimate, lower, upper)",
    ['org', 'stratum', 'bound'],
    async (gauge) => {
      for (const r of await rows())
        for (const stratum of ['recent', 'history'] as const) {
          const e = r.completeness[stratum];
          if (!e) continue;
          gauge.set({ org: r.orgId, stratum, bound: 'estimate' }, e.estimate);
          gauge.set({ org: r.orgId, stratum, bound: 'lower' }, e.lower);
          gauge.set({ org: r.orgId, stratum, bound: 'upper' }, e.upper);
        }
    },
  );
  scrapedGauge(
    registry,
    'validic_sync_audit_last_run_timestamp_seconds',
    'When the newest run of the completeness audit started, per org and kind (schedule, command)',
    ['org', 'kind'],
    async (gauge) => {
      for (const r of await rows())
        if (r.lastRun)
          gauge.set({ org: r.orgId, kind: r.lastRun.kind }, Date.parse(r.lastRun.startedAt) / 1000);
    },
  );
}
