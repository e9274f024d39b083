/**
 * The completeness audit's part of `status` (src/metrics/audit-status.ts): the scheduled estimate per
 * stratum with its 95 % interval, the last run, what the runs found and the drift per day.
 */
import { type CompletenessEstimate, formatShare } from '../audit/completeness-interval.ts';
import type { AuditStatus } from '../metrics/audit-status.ts';
import { formatColumns as table } from '../report/format-table.ts';

const describe = (e: CompletenessEstimate | null) =>
  e
    ? `${formatShare(e.estimate)} of cells complete (95 % interval ${formatShare(e.lower)} to ${formatShare(e.upper, 'up')}; ${e.sampled} of ${e.population} cells audited)`
    : 'no cell audited yet';

/** A stratum's estimate, and the cells drawn that no sync had covered yet (not judged). */
const describeStratum = (e: CompletenessEstimate | null, notYetSynced: number) => {
  const unsynced = `${notYetSynced} cell${notYetSynced === 1 ? '' : 's'} drawn not yet synced (not judged)`;
  if (!e) return notYetSynced > 0 ? `no synced cell audited yet; ${unsynced}` : describe(e);
  return notYetSynced > 0 ? `${describe(e)}; ${unsynced}` : describe(e);
};

export function formatAuditStatus(audit: AuditStatus, lagOf: (at: string | null) => string): string[] {
  const out = ['', 'completeness audit (warehouse compared with the platform, cell by cell)'];
  const c = audit.completeness;
  out.push(
    `  last ${c.sinceDays} days, recent 30 days: ${describeStratum(c.recent, c.notYetSynced.recent)}`,
    `  last ${c.sinceDays} days, older history: ${describeStratum(c.history, c.notYetSynced.history)}`,
  );
  const run = audit.lastRun;
  if (run) {
    const { cells, records } = run.totals;
    out.push(
      `  last run ${run.id} (${run.kind}, ${run.rangeFrom}..${run.rangeTo}): ${run.state}, ${lagOf(run.startedAt)} ago; cells ${cells.complete} complete, ${cells.drift} drift, ${cells.failed} failed${cells.unsynced ? `, ${cells.unsynced} not yet synced` : ''} of ${run.planned}${run.estimate ? `; ${describe(run.estimate)}` : ''}`,
      `    records: equal ${records.equal}, missing ${records.missing}, stale ${records.stale}, extra ${records.extra}, repaired ${records.repaired}`,
    );
  } else out.push('  no audit run yet');
  const week = audit.last7d;
  out.push(
    `  found in the last 7 days: ${week.cells.drift} cells with drift of ${week.cells.complete + week.cells.drift}; records missing ${week.records.missing}, stale ${week.records.stale}, extra ${week.records.extra}, repaired ${week.records.repaired}`,
  );
  if (audit.driftPerDay.length > 0)
    out.push(
      ...table(
        ['day', 'cells', 'not yet synced', 'drift', 'missing', 'stale', 'extra', 'repaired'],
        audit.driftPerDay.map((d) => [
          d.day,
          String(d.cells),
          String(d.unsynced),
          String(d.drift),
          String(d.missing),
          String(d.stale),
          String(d.extra),
          String(d.repaired),
        ]),
      ).map((l) => `    ${l}`),
    );
  return out;
}
