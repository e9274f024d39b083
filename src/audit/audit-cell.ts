/**
 * One cell audited: fetch the user × resource × window from the platform (one request), compare it with
 * the warehouse (compare-cell.ts), and load what is missing or stale through the one loader
 * (`arrived_via = 'audit'`, which takes the platform's version at the same created_at: see
 * decide-versions.ts), then read back what it loaded: a record that still differs is named with why.
 * A cell the platform refuses for good (a resource not enabled, a user gone) is `failed` with the
 * reason; any other failure (an outage, the budget) is thrown, for the job to retry.
 */
import { PermanentError } from '../errors/index.ts';
import { normalizeRecord } from '../normalize/normalize-record.ts';
import type { LoadResult } from '../pipeline/batch.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import { formatUtcDate, parseUtcDate, recordTypeOf, toV2Resource } from '../validic/platform-limits.ts';
import type { AuditCell, AuditedCell, AuditVersion } from '../warehouse/audits.ts';
import { cellOutcome, compareCell } from './compare-cell.ts';

export interface AuditCellDeps {
  fetchRecords(params: {
    uid: string;
    resource: string;
    startDate: string;
    endDate: string;
    signal?: AbortSignal;
  }): Promise<unknown[]>;
  currentVersions(ids: readonly string[]): Promise<ReadonlyMap<string, AuditVersion>>;
  liveRecordIds(uid: string, type: string, fromDate: string, toDate: string): Promise<string[]>;
  /** Loads raw records through the loader with `arrived_via = 'audit'`. */
  load(raws: unknown[]): Promise<LoadResult>;
  signal?: AbortSignal;
}

export interface AuditCellOptions {
  /** Load what is missing or stale (false: `audit --no-repair`, report only). */
  repair: boolean;
  /**
   * Versions the platform created after this instant are left out: the stream may be delivering them
   * right now, and a record seconds old is not drift (`audit.settleMinutes`).
   */
  settledBefore: Date;
}

interface PlatformVersion extends AuditVersion {
  raw: unknown;
}

export async function auditCell(
  deps: AuditCellDeps,
  cell: AuditCell,
  options: AuditCellOptions,
): Promise<AuditedCell> {
  const empty = { platformRecords: 0, equal: 0, missing: 0, stale: 0, extra: 0, repaired: 0, driftIds: [] };
  let raws: unknown[];
  try {
    raws = await deps.fetchRecords({ ...cell, signal: deps.signal });
  } catch (error) {
    if (error instanceof PermanentError && !deps.signal?.aborted)
      return { ...cell, ...empty, outcome: 'failed', error: redactedMessage(error) };
    throw error;
  }
  const settled = options.settledBefore.getTime();
  const platform: PlatformVersion[] = [];
  /** Ids returned in versions too young to judge: neither compared nor taken as extra. */
  const unsettled = new Set<string>();
  for (const raw of raws) {
    // A record the normalizer rejects is the loader's quarantine's business, not the audit's.
    const normalized = normalizeRecord(raw);
    if (!normalized.ok) continue;
    const { id, checksum, createdAt, deletedAt } = normalized.value.record;
    if (Date.parse(createdAt) > settled) unsettled.add(id);
    else platform.push({ id, checksum, createdAt, deletedAt, raw });
  }
  const stored = await deps.currentVersions([...new Set(platform.map((v) => v.id))]);
  // The window's inner days: a record whose UTC date lies there is returned under either reading of the
  // platform's date filter (UTC or the user's local date), so its absence there is the platform's word.
  const inner = {
    from: formatUtcDate(parseUtcDate(cell.startDate) + 1),
    to: formatUtcDate(parseUtcDate(cell.endDate) - 1),
  };
  const type = recordTypeOf(toV2Resource(cell.resource));
  const liveInner = (await deps.liveRecordIds(cell.uid, type, inner.from, inner.to)).filter(
    (id) => !unsettled.has(id),
  );
  const comparison = compareCell(platform, stored, liveInner);
  const toLoad = [...comparison.missing, ...comparison.stale];
  let repaired = 0;
  let unrepaired: string[] = [];
  if (options.repair && toLoad.length > 0) {
    const loaded = await deps.load(toLoad.map((v) => v.raw));
    repaired = loaded.inserted + loaded.updated;
    unrepaired = whyNotRepaired(toLoad, await deps.currentVersions(toLoad.map((v) => v.id)));
  }
  return {
    ...cell,
    outcome: cellOutcome(comparison),
    platformRecords: new Set(platform.map((v) => v.id)).size,
    equal: comparison.equal,
    missing: comparison.missing.length,
    stale: comparison.stale.length,
    extra: comparison.extra.length,
    repaired,
    driftIds: [...toLoad.map((v) => v.id), ...comparison.extra],
    unrepaired,
  };
}

const describeVersion = (v: AuditVersion) =>
  `checksum ${v.checksum} created ${v.createdAt}${v.deletedAt === null ? '' : ' deleted'}`;

/**
 * The loaded records that still differ from the platform once the repair committed, each as `id: why`.
 * None is expected: the loader takes the platform's version unless the warehouse's is later, and a
 * later one counts equal. A record named here is a fault of the loader or a change made under it.
 */
function whyNotRepaired(loaded: readonly AuditVersion[], now: ReadonlyMap<string, AuditVersion>): string[] {
  const after = compareCell(loaded, now, []);
  return [
    ...after.missing.map((v) => `${v.id}: still missing after the repair`),
    ...after.stale.map(
      (v) =>
        `${v.id}: the warehouse still holds ${describeVersion(now.get(v.id)!)}, the platform ${describeVersion(v)}`,
    ),
  ];
}
