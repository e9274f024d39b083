/**
 * The pure heart of the records loader: given the versions a batch brings, the stored current version
 * of each id and which of the batch's versions record_versions already holds, decide per id what the
 * load does.
 *
 * The pure heart of the records loader: given the versions a batch brings, the stored current version
 * of each id and which of the batch's versions record_versions already holds, decide per id what the
 * load does. No I/O: load-records.ts probes, calls this, then writes what it says.
 *
 * The rules:
 *
 * - same id and checksum: nothing is written (counted unchanged);
 * - different checksum: the later created_at wins, ties go to the greater checksum (so the outcome never
 *   depends on arrival order); the replaced version goes to record_versions;
 * - an older version arriving late is never applied (counted stale) and is kept in record_versions;
 * - a delete wins even when its checksum equals the stored one (the platform's checksum need not cover
 *   `deleted_at`): a version carrying `deleted_at` replaces the same checksum without it, unless the
 *   stored version is newer (later created_at). The same deleted version again is unchanged.
 *
 * So record_versions = every distinct (id, checksum) ever seen minus the current one, in any order (a
 * delete with the stored checksum replaces the row in place: no second row of that checksum).
 * test/unit/warehouse-loader-decide-versions.test.ts checks these as properties, without PostgreSQL.
 */

/** One version of a record as far as ordering goes. */
export interface VersionOrder {
  createdAt: string;
  checksum: string;
  /** Absent or null: not deleted. */
  deletedAt?: string | null;
}

/** One version a batch brings. */
export interface BatchVersion extends VersionOrder {
  id: string;
}

/** The stored current version of an id. */
export interface StoredVersion {
  checksum: string;
  createdAt: string;
  /** Only whether it is set matters here (see isNewerVersion). */
  deletedAt: string | null;
}

/**
 * Total order of versions of one id: created_at, then checksum (code-unit order), then a deleted
 * version above the same version not deleted (a delete that keeps the checksum and the created_at
 * still wins, whatever order the two arrive in).
 */
export function isNewerVersion(a: VersionOrder, b: VersionOrder) {
  const ta = Date.parse(a.createdAt);
  const tb = Date.parse(b.createdAt);
  if (ta !== tb) return ta > tb;
  if (a.checksum !== b.checksum) return a.checksum > b.checksum;
  return isDeleted(a) && !isDeleted(b);
}

const isDeleted = (v: VersionOrder) => v.deletedAt !== undefined && v.deletedAt !== null;

/** The key of one (id, checksum) in `archivedKeys`. */
export const versionKey = (id: string, checksum: string) => `${id}\u0001${checksum}`;

/** What the load does to an id: insert it, update it, leave it (same), or ignore the batch's older version (stale). */
export type VersionAction = 'insert' | 'update' | 'same' | 'stale';

/** How one item of the batch counts. */
export type ItemCount = 'inserted' | 'updated' | 'unchanged' | 'stale';

export interface VersionDecision<V extends BatchVersion> {
  /** Per id of the batch. */
  actions: Map<string, VersionAction>;
  /** The versions that become current (one per id inserted or updated). */
  toApply: V[];
  /** The batch's versions that go to record_versions (older, stale, not already archived). */
  toArchive: V[];
  insertedIds: string[];
  updatedIds: string[];
  /** Updated ids whose stored row is replaced by another checksum: that row goes to record_versions. */
  replacedIds: string[];
  /** Per item of `batchVersions`, in its order. */
  counts: ItemCount[];
}

/**
 * Decides the load of a batch's record versions against the stored ones (`storedVersions`: id → the
 * current version, null or absent when none; `archivedKeys`: versionKey of the batch's versions
 * record_versions already holds). Pure; the load locks make the probe current for the transaction.
 */
export function decideVersions<V extends BatchVersion>(
  batchVersions: readonly V[],
  storedVersions: ReadonlyMap<string, StoredVersion | null>,
  archivedKeys: ReadonlySet<string>,
): VersionDecision<V> {
  // Distinct versions per (id, checksum), and the newest one (the candidate) per id.
  const distinct = new Map<string, V>();
  const winners = new Map<string, V>();
  for (const v of batchVersions) {
    const key = versionKey(v.id, v.checksum);
    if (!distinct.has(key)) distinct.set(key, v);
    const best = winners.get(v.id);
    if (!best || isNewerVersion(v, best)) winners.set(v.id, v);
  }
  const stored = (id: string) => storedVersions.get(id) ?? null;

  const actions = new Map<string, VersionAction>();
  for (const [id, winner] of winners) {
    const current = stored(id);
    let action: VersionAction;
    if (!current) action = 'insert';
    else if (current.checksum === winner.checksum) {
      // Same content: only a delete not older than the stored version changes anything.
      action = isDeleted(winner) && isNewerVersion(winner, current) ? 'update' : 'same';
    } else action = isNewerVersion(winner, current) ? 'update' : 'stale';
    actions.set(id, action);
  }
  const applied = (id: string) => {
    const a = actions.get(id);
    return a === 'insert' || a === 'update';
  };
  const toApply = [...winners.values()].filter((w) => applied(w.id));
  // Every version that does not end up current goes to record_versions once: the batch's older or
  // stale versions here, the stored row being replaced (replacedIds, straight from validic.records).
  const toArchive = [...distinct.values()].filter((v) => {
    if (v.checksum === stored(v.id)?.checksum) return false;
    if (applied(v.id) && winners.get(v.id)?.checksum === v.checksum) return false;
    return !archivedKeys.has(versionKey(v.id, v.checksum));
  });
  const updatedIds = [...actions].filter(([, a]) => a === 'update').map(([id]) => id);
  const insertedIds = [...actions].filter(([, a]) => a === 'insert').map(([id]) => id);
  // A delete of the same checksum replaces the row in place: no stored row to keep.
  const replacedIds = updatedIds.filter((id) => stored(id)?.checksum !== winners.get(id)?.checksum);

  // Per item: the item that became current counts inserted/updated; an item equal to the final
  // current version counts unchanged (a duplicate); anything older counts stale.
  const counts: ItemCount[] = [];
  const counted = new Set<string>();
  for (const v of batchVersions) {
    const action = actions.get(v.id)!;
    const winner = winners.get(v.id)!;
    const finalChecksum = action === 'stale' ? stored(v.id)?.checksum : winner.checksum;
    if (applied(v.id) && v.checksum === winner.checksum && !counted.has(v.id)) {
      counted.add(v.id);
      counts.push(action === 'insert' ? 'inserted' : 'updated');
    } else if (v.checksum === finalChecksum) counts.push('unchanged');
    else counts.push('stale');
  }
  return { actions, toApply, toArchive, insertedIds, updatedIds, replacedIds, counts };
}
