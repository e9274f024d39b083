/**
 * The completeness audit as `status`, `status --json` (`orgs[].audit`), `/metrics` and the HTML report
 * show it: the last run with its estimate, the scheduled audit's estimate per stratum over the last
 * `audit.estimateDays`, what the runs found over the last day, week and all time, and the drift found
 * per day. Reads the run rows and, for the estimate and the days, the cells of the span (indexed by
 * org, stratum and time). Why and how: src/audit/README.md.
 */
import type { Kysely } from 'kysely';
import { type CompletenessEstimate, estimateCompleteness } from '../audit/completeness-interval.ts';
import { auditStrata } from '../audit/sample-cells.ts';
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

export interface AuditStatus {
  lastRun: (AuditRunRow & { estimate: CompletenessEstimate | null }) | null;
  /**
   * The scheduled audit's estimate of the share of complete cells, per stratum (recent: the last 30
   * days; history: older windows), over the cells it audited in the last `sinceDays` days.
   */
  completeness: {
    sinceDays: number;
    recent: CompletenessEstimate | null;
    history: CompletenessEstimate | null;
  };
  last24h: AuditTotals;
  last7d: AuditTotals;
  allTime: AuditTotals;
  /** Cells audited and drift found per UTC day over the last 7 days, newest first. */
  driftPerDay: AuditDriftDay[];
}

export interface AuditPopulation {
  /** Users the audit draws from (pollable). */
  users: number;
  /** Resources per user. */
  resources: number;
  /** History windows per user and resource (sample-cells.ts, auditStrata). */
  historyWindows: number;
  /** `audit.estimateDays`. */
  estimateDays: number;
}

const DAY_MS = 86_400_000;

export async function readAuditStatus(
  db: Kysely<Database>,
  orgId: string,
  now: Date,
  population: AuditPopulation,
): Promise<AuditStatus> {
  const last = await readLastAudit(db, orgId);
  const since = new Date(now.getTime() - population.estimateDays * DAY_MS);
  const perUser = population.users * population.resources;
  const estimate = async (stratum: 'recent' | 'history', cells: number) => {
    const sample = await stratumSample(db, orgId, stratum, since);
    return estimateCompleteness(sample.complete, sample.sampled, cells);
  };
  return {
    lastRun: last
      ? {
          ...last,
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
      sinceDays: population.estimateDays,
      recent: await estimate('recent', perUser),
      history: await estimate('history', perUser * population.historyWindows),
    },
    last24h: await auditTotalsSince(db, orgId, new Date(now.getTime() - DAY_MS)),
    last7d: await auditTotalsSince(db, orgId, new Date(now.getTime() - 7 * DAY_MS)),
    allTime: await auditTotalsSince(db, orgId),
    driftPerDay: await auditDriftPerDay(db, orgId, new Date(now.getTime() - 7 * DAY_MS)),
  };
}

/** The audit's population as the scheduled audit draws it: the org's resources and lookback. */
export function auditPopulation(
  config: { audit: { lookbackDays: number; estimateDays: number } } | undefined,
  resources: readonly string[],
  users: number,
): AuditPopulation {
  return {
    users,
    resources: new Set(resources).size,
    historyWindows: auditStrata('2026-01-01', config?.audit.lookbackDays ?? 365).history.length,
    estimateDays: config?.audit.estimateDays ?? 7,
  };
}
