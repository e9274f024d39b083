/**
 * The completeness audit's Prometheus metrics (src/audit/README.md), read at scrape time from the audit's
 * tables through `source` (once per scrape for all of them). They are facts of the warehouse, the same
 * for every replica: one replica of a fleet exports them (`fleetReporter`), so a sum over replicas does
 * not multiply them.
 *
 * - `validic_sync_audit_cells_total{org,outcome}`: cells audited (complete, drift, failed), all runs.
 * - `validic_sync_audit_records_total{org,outcome}`: records compared (equal, missing, stale, extra) and
 *   repaired.
 * - `validic_sync_audit_completeness_ratio{org,stratum,bound}`: the scheduled audit's estimate of the
 *   share of complete cells (recent, history) with its 95 % interval (estimate, lower, upper).
 * - `validic_sync_audit_last_run_timestamp_seconds{org,kind}`: when the newest run started.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CompletenessEstimate } from '../audit/completeness-interval.ts';
import type { AuditTotals } from '../warehouse/audits.ts';

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
  let read: { at: number; value: Promise<AuditMetricsRow[] | undefined> } | undefined;
  const rows = async () => {
    if (!(await fleetReporter())) return [];
    if (!read || Date.now() - read.at > 1000) read = { at: Date.now(), value: source() };
    return (await read.value) ?? [];
  };
  new Counter({
    name: 'validic_sync_audit_cells_total',
    help: 'Cells (user × resource × ≤ 30-day window) the completeness audit compared with the platform, per org and outcome (complete, drift, failed)',
    labelNames: ['org', 'outcome'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await rows())
        for (const [outcome, n] of Object.entries(r.allTime.cells)) this.inc({ org: r.orgId, outcome }, n);
    },
  });
  new Counter({
    name: 'validic_sync_audit_records_total',
    help: 'Records the completeness audit compared, per org and outcome (equal, missing, stale, extra), and those it repaired (repaired)',
    labelNames: ['org', 'outcome'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await rows())
        for (const [outcome, n] of Object.entries(r.allTime.records)) this.inc({ org: r.orgId, outcome }, n);
    },
  });
  new Gauge({
    name: 'validic_sync_audit_completeness_ratio',
    help: "The scheduled audit's estimate of the share of cells whose warehouse copy equals the platform, per org and stratum (recent: the last 30 days; history: older), with its 95 % interval (bound: estimate, lower, upper)",
    labelNames: ['org', 'stratum', 'bound'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await rows())
        for (const stratum of ['recent', 'history'] as const) {
          const e = r.completeness[stratum];
          if (!e) continue;
          this.set({ org: r.orgId, stratum, bound: 'estimate' }, e.estimate);
          this.set({ org: r.orgId, stratum, bound: 'lower' }, e.lower);
          this.set({ org: r.orgId, stratum, bound: 'upper' }, e.upper);
        }
    },
  });
  new Gauge({
    name: 'validic_sync_audit_last_run_timestamp_seconds',
    help: 'When the newest run of the completeness audit started, per org and kind (schedule, command)',
    labelNames: ['org', 'kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await rows())
        if (r.lastRun)
          this.set({ org: r.orgId, kind: r.lastRun.kind }, Date.parse(r.lastRun.startedAt) / 1000);
    },
  });
}
