/**
 * One audited cell, compared (pure): the versions the platform returned for a user × resource × window
 * against what the warehouse holds as those records' current versions, and the warehouse's live records
 * of the window's inner days. Why and how: README.md, "What a cell compares".
 */
import type { AuditVersion } from '../warehouse/audits.ts';
import { isNewerVersion } from '../warehouse/loader/decide-versions.ts';

export interface CellComparison<P extends AuditVersion> {
  /** Same checksum and deletedness on both sides, or the warehouse ahead (a newer version than the platform's read). */
  equal: number;
  /** Returned by the platform, not in the warehouse. */
  missing: P[];
  /** In the warehouse at another version (checksum or deleted_at) that is not newer than the platform's. */
  stale: P[];
  /** Live in the warehouse within the window's inner days, not returned by the platform. */
  extra: string[];
}

/**
 * `platform`: what the cell's request returned (several versions of one id: the newest counts);
 * `stored`: the warehouse's current version of those ids (any date); `liveInner`: ids of the warehouse's
 * records of this user and resource, not deleted, whose UTC start date lies in the window's inner days
 * (one day in from each edge, where either reading of the platform's date filter returns them).
 */
export function compareCell<P extends AuditVersion>(
  platform: readonly P[],
  stored: ReadonlyMap<string, AuditVersion>,
  liveInner: readonly string[],
): CellComparison<P> {
  const newest = new Map<string, P>();
  for (const v of platform) {
    const best = newest.get(v.id);
    if (!best || isNewerVersion(v, best)) newest.set(v.id, v);
  }
  const result: CellComparison<P> = { equal: 0, missing: [], stale: [], extra: [] };
  for (const [id, version] of newest) {
    const held = stored.get(id);
    if (!held) result.missing.push(version);
    else if (sameVersion(held, version)) result.equal += 1;
    // The warehouse may be ahead of the platform's read (the stream brought an update the retrieval API
    // does not show yet): not drift. Only a strictly later created_at proves that; anything else differs.
    else if (Date.parse(held.createdAt) > Date.parse(version.createdAt)) result.equal += 1;
    else result.stale.push(version);
  }
  for (const id of liveInner) if (!newest.has(id)) result.extra.push(id);
  return result;
}

const isDeleted = (v: AuditVersion) => v.deletedAt !== null;

function sameVersion(a: AuditVersion, b: AuditVersion): boolean {
  return a.checksum === b.checksum && isDeleted(a) === isDeleted(b);
}

/** The cell's outcome: complete when nothing is missing, stale or extra. */
export function cellOutcome(comparison: CellComparison<AuditVersion>): 'complete' | 'drift' {
  const { missing, stale, extra } = comparison;
  return missing.length + stale.length + extra.length === 0 ? 'complete' : 'drift';
}
