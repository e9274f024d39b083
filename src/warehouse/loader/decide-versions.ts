/**
 * The pure heart of the records loader: given the versions a batch brings, the stored current version
 * of each id and which of the batch's versions record_versions already holds, decide per id what the
 * load does. No I/O: load-records.ts probes, calls this, then writes what it says.
 *
 * A version is one (id, checksum, created_at, deleted or not). The platform dedupes on id + checksum,
 * but its checksum need not cover `deleted_at`, and a deleted record can be revived with the checksum
 * it had before the delete and a later created_at: only the four together tell every version apart.
 *
 * The rules:
 *
 * - the same version again: nothing is written (counted unchanged);
 * - another version: the later created_at wins; at equal created_at the greater checksum, then a
 *   deleted version above the same one not deleted (a total order, so the outcome never depends on
 *   arrival order). A delete that keeps the checksum wins over the version before it, and a revival
 *   (the same checksum, `deleted_at` null, a later created_at) wins over the delete;
 * - an older version arriving late is never applied (counted stale) and is kept in record_versions;
 * - the replaced current version goes to record_versions, whatever changed;
 * - an audit's batch (`platformCurrent`) is the platform's answer of that moment: at the same created_at
 *   its version replaces the stored one even when the order above ranks it lower (the stored one was
 *   never the platform's, or no longer is), and leaves record_versions if it was kept there. A later
 *   created_at in the warehouse still wins.
 *
 * So record_versions = every distinct version ever seen minus the current one, in any order.
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
 * still wins, whatever order the two arrive in). Neither is newer exactly when both are one version.
 */
export function isNewerVersion(a: VersionOrder, b: VersionOrder) {
  const ta = Date.parse(a.createdAt);
  const tb = Date.parse(b.createdAt);
  if (ta !== tb) return ta > tb;
  if (a.checksum !== b.checksum) return a.checksum > b.checksum;
  return isDeleted(a) && !isDeleted(b);
}

export const isDeleted = (v: VersionOrder) => v.deletedAt !== undefined && v.deletedAt !== null;

/** Whether two versions of one id are the same version (see the header). */
export const sameVersion = (a: VersionOrder, b: VersionOrder) =>
  !isNewerVersion(a, b) && !isNewerVersion(b, a);

/** The key of one version of an id, in `archivedKeys`: id, checksum, created_at (ms) and deletedness. */
export const versionKey = (id: string, v: VersionOrder) =>
  `${id}\u0001${v.checksum}\u0001${Date.parse(v.createdAt)}\u0001${isDeleted(v) ? 'd' : 'l'}`;

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
  /** Updated ids: their stored row, another version, goes to record_versions. */
  replacedIds: string[];
  /**
   * Applied versions record_versions holds (an audit's batch taking back a version once ranked lower):
   * they leave record_versions, which never holds the current version.
   */
  toUnarchive: V[];
  /** Per item of `batchVersions`, in its order. */
  counts: ItemCount[];
}

export interface DecideOptions {
  /**
   * The batch is the platform's current answer (the audit's repair): at the same created_at its
   * version replaces the stored one whatever their order (see the header).
   */
  platformCurrent?: boolean;
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
  options: DecideOptions = {},
): VersionDecision<V> {
  // Distinct versions, and the newest one (the candidate) per id.
  const distinct = new Map<string, V>();
  const winners = new Map<string, V>();
  for (const v of batchVersions) {
    const key = versionKey(v.id, v);
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
    else if (sameVersion(winner, current)) action = 'same';
    else if (isNewerVersion(winner, current)) action = 'update';
    else if (options.platformCurrent && Date.parse(winner.createdAt) === Date.parse(current.createdAt))
      action = 'update';
    else action = 'stale';
    actions.set(id, action);
  }
  const applied = (id: string) => {
    const a = actions.get(id);
    return a === 'insert' || a === 'update';
  };
  /** The version current once the batch is written. */
  const final = (id: string): VersionOrder | null => (applied(id) ? winners.get(id)! : stored(id));
  const toApply = [...winners.values()].filter((w) => applied(w.id));
  // Every version that does not end up current goes to record_versions once: the batch's older or
  // stale versions here, the stored row being replaced (replacedIds, straight from validic.records).
  const toArchive = [...distinct.values()].filter((v) => {
    const current = stored(v.id);
    if (current && sameVersion(v, current)) return false;
    if (sameVersion(v, final(v.id)!)) return false;
    return !archivedKeys.has(versionKey(v.id, v));
  });
  const updatedIds = [...actions].filter(([, a]) => a === 'update').map(([id]) => id);
  const insertedIds = [...actions].filter(([, a]) => a === 'insert').map(([id]) => id);

  // Per item: the item that became current counts inserted/updated; an item equal to the final
  // current version counts unchanged (a duplicate); anything else counts stale.
  const counts: ItemCount[] = [];
  const counted = new Set<string>();
  for (const v of batchVersions) {
    const action = actions.get(v.id)!;
    if (applied(v.id) && sameVersion(v, winners.get(v.id)!) && !counted.has(v.id)) {
      counted.add(v.id);
      counts.push(action === 'insert' ? 'inserted' : 'updated');
    } else if (sameVersion(v, final(v.id)!)) counts.push('unchanged');
    else counts.push('stale');
  }
  const toUnarchive = toApply.filter((v) => archivedKeys.has(versionKey(v.id, v)));
  return {
    actions,
    toApply,
    toArchive,
    insertedIds,
    updatedIds,
    replacedIds: updatedIds,
    toUnarchive,
    counts,
  };
}
