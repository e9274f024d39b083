/**
 * The one shape every arrival path produces (the README's "How data flows"): a batch of raw items as
 * they came off the wire, plus the progress it makes (`BatchProgress`: cursors replaced, ledger windows done). `applyBatch` (src/warehouse/loader/apply-batch.ts) writes
 * both in one transaction, so a cursor never moves past uncommitted data.
 */

/** How a record reached the warehouse; stored in `records.arrived_via`. */
export type ArrivedVia = 'poll' | 'stream' | 'replay' | 'reconcile' | 'audit' | 'legacy' | 'push';

/**
 * One raw item. `kind` says which parser applies; `frame` is a stream/replay `data` frame whose payload
 * is routed by shape (a connection event or a record of any resource type). `unparseable` carries text
 * that never became JSON (a truncated frame, say): it goes straight to quarantine with its reason.
 * A `raw` parsed from the platform's JSON holds each number a double would change as its text
 * (exact-json.ts), so it is stored as sent.
 */
export type RawItem =
  | { kind: 'record'; raw: unknown }
  | { kind: 'user'; raw: unknown }
  | { kind: 'connection_event'; raw: unknown }
  | { kind: 'frame'; raw: unknown }
  | { kind: 'legacy'; object: string; raw: unknown }
  | { kind: 'unparseable'; text: string; reason: string };

export interface Batch {
  orgId: string;
  arrivedVia: ArrivedVia;
  items: RawItem[];
}

/** A named cursor in `validic_sync.checkpoints`, replaced by this batch's commit. */
export interface CursorWrite {
  key: string;
  value: unknown;
}

/** Marks one backfill window of the ledger (`validic_sync.backfill_windows`) done with this batch. */
export interface WindowDone {
  runId: string;
  windowKey: string;
  /** Records this window brought (all pages). */
  records: number;
  /** HTTP requests this window cost. */
  requests: number;
}

/** What a batch moves forward with its data, in its transaction: cursors replaced and ledger windows done. */
export interface BatchProgress {
  cursors?: CursorWrite[];
  windows?: WindowDone[];
}

export interface LoadCounts {
  inserted: number;
  updated: number;
  unchanged: number;
  /** An older version arriving after a newer one: kept in record_versions, never applied. */
  stale: number;
  quarantined: number;
}

export interface LoadResult extends LoadCounts {
  /** The same counts per record type (`measurement`, `nutrition`, …, `user`, `connection_event`, `legacy:<object>`). */
  byType: Record<string, LoadCounts>;
  /** Newest `created_at` among the records of the batch that were committed (for lag metrics), ISO string. */
  newestCreatedAt: string | null;
  /**
   * Times the loader ran a transaction again because PostgreSQL rolled it back for a deadlock (40P01), a
   * serialization failure (40001) or a lock not granted within the lock timeout (55P03); 0 normally
   * (src/warehouse/loader/load-transaction.ts).
   */
  transactionRetries: number;
}

export function emptyCounts(): LoadCounts {
  return { inserted: 0, updated: 0, unchanged: 0, stale: 0, quarantined: 0 };
}

// Counting a LoadResult: totals and the same counts per type.

export function emptyLoadResult(): LoadResult {
  return { ...emptyCounts(), byType: {}, newestCreatedAt: null, transactionRetries: 0 };
}

function counter(result: LoadResult, type: string): LoadCounts {
  let counts = result.byType[type];
  if (!counts) {
    counts = emptyCounts();
    result.byType[type] = counts;
  }
  return counts;
}

export function bump(result: LoadResult, type: string, key: keyof LoadCounts, by = 1): void {
  if (by === 0) return;
  result[key] += by;
  counter(result, type)[key] += by;
}

/**
 * Adds `add` into `into`: totals, per-type counts, transaction retries, and the newer of the two
 * `newestCreatedAt`.
 */
export function addLoadResult(into: LoadResult, add: LoadResult): void {
  for (const key of Object.keys(emptyCounts()) as (keyof LoadCounts)[]) {
    into[key] += add[key];
    for (const [type, counts] of Object.entries(add.byType)) counter(into, type)[key] += counts[key];
  }
  into.transactionRetries += add.transactionRetries;
  const newest = add.newestCreatedAt;
  if (newest && (!into.newestCreatedAt || newest > into.newestCreatedAt)) into.newestCreatedAt = newest;
}
