/**
 * The loader: applies one batch and its cursors in ONE transaction (the README's "How data flows":
 * every arrival path hands the loader the same batch).
 *
 * 1. Normalize every item (pure; bad items become quarantine entries, never exceptions).
 * 2. Reduce within the batch: per record id the newest version (later created_at; tie: the greater
 *    checksum, then deleted above not deleted, so the outcome never depends on arrival order) is the
 *    candidate; the others are kept for record_versions (decide-versions.ts).
 * 3. In one transaction, under advisory locks on the keys it writes (loads sharing a key never interleave,
 *    so the decisions below cannot race; see loadLocks): probe the stored versions with ONE keys-only query
 *    (a redelivered batch costs no more than that), decide per id (insert / update / same / stale), then
 *    COPY only the rows to write into session temp tables and apply them set-based: archive replaced and
 *    older versions, update changed records and insert new ones (a record's metrics, segments and series
 *    are columns of its own row). Users, connection events and legacy records are staged and upserted the
 *    same way; quarantine is written, cursors move and ledger windows are marked done in the same
 *    transaction.
 *
 * Duplicates are filtered BEFORE writing (not by ON CONFLICT … WHERE), so redelivering a batch writes
 * no tuple at all in `validic`: no dead tuples, no WAL, no index churn. Statement count per batch is
 * constant; nothing is done per row.
 */
import { setImmediate } from 'node:timers/promises';
import { type Logger, silentLogger } from '../../log/logger.ts';
import { normalizeItem } from '../../normalize/normalize-item.ts';
import type {
  ConnectionEventRow,
  LegacyRecordRow,
  NormalizedRecord,
  QuarantineEntry,
  UserRow,
} from '../../normalize/normalized-types.ts';
import type { Batch, BatchProgress, LoadCounts, LoadResult } from '../../pipeline/batch.ts';
import { emptyLoadResult } from '../../pipeline/batch.ts';
import { withSpan } from '../../telemetry/tracer.ts';
import type { EncodedCopyRow } from '../copy-text-format.ts';
import type { Warehouse } from '../open-warehouse.ts';
import { COPY_FROM_RECORDS, encodeNewRecord } from './insert-new-records.ts';
import { loadConnectionEvents, loadLegacy, loadUsers } from './load-kinds.ts';
import { loadRecords, probeStatement } from './load-records.ts';
import {
  type LoadLocks,
  loadTransaction,
  reportTransactionRetry,
  retryOnConflict,
} from './load-transaction.ts';
import { ensureMonthPartitions, forgetMonthPartitions, isMissingMonthPartition } from './month-partitions.ts';
import { progressCtes, writeProgress } from './write-progress.ts';
import { badPointsNote, badValuesNote, writeQuarantine } from './write-quarantine.ts';

export interface ApplyBatchOptions {
  log?: Logger;
}

interface Sorted {
  records: NormalizedRecord[];
  users: UserRow[];
  events: ConnectionEventRow[];
  legacy: LegacyRecordRow[];
  quarantine: QuarantineEntry[];
  /** Informational quarantine entries of records that DO load (points, metrics or fields left out). */
  notes: QuarantineEntry[];
}

/**
 * Items normalized between two turns of the event loop. Normalizing a 500-frame stream batch takes
 * tens of milliseconds of CPU; done in one go it would stall the write in flight on the same thread
 * (its COPY data and its round trips wait for the loop), and PostgreSQL would sit idle meanwhile.
 */
const ITEMS_PER_TURN = 25;

/** A batch with its items normalized and sorted: the CPU half of applyBatch, without I/O. */
export interface PreparedBatch {
  batch: Batch;
  sorted: Sorted;
  /** The records' COPY lines, when encoded ahead (`encodeAhead`). */
  encoded?: Map<NormalizedRecord, EncodedCopyRow>;
}

export interface PrepareOptions {
  /**
   * Also encode the records' COPY lines now. For a caller that prepares the next batch while the
   * previous one is written (the stream): the encoding then overlaps that write instead of running
   * inside its own transaction. Wasted on records that turn out to be stored already.
   */
  encodeAhead?: boolean;
}

/**
 * Normalizes a batch ahead of its write, yielding to the event loop every ITEMS_PER_TURN items. The
 * stream prepares the next micro-batch while the previous one is still being written (PostgreSQL
 * works on another core meanwhile).
 */
export async function prepareBatch(batch: Batch, options: PrepareOptions = {}): Promise<PreparedBatch> {
  const sorted: Sorted = { records: [], users: [], events: [], legacy: [], quarantine: [], notes: [] };
  for (let i = 0; i < batch.items.length; i += 1) {
    if (i > 0 && i % ITEMS_PER_TURN === 0) await setImmediate();
    const n = normalizeItem(batch.items[i]!);
    switch (n.kind) {
      case 'record':
        sorted.records.push(n.value);
        if (n.value.badPoints.length > 0) sorted.notes.push(badPointsNote(n.value));
        if (n.value.badValues.length > 0)
          sorted.notes.push(badValuesNote(n.value.record.type, n.value.badValues, n.value.record.raw));
        break;
      case 'user':
        sorted.users.push(n.value);
        break;
      case 'connection_event':
        sorted.events.push(n.value);
        break;
      case 'legacy':
        sorted.legacy.push(n.value);
        if (n.value.badValues.length > 0)
          sorted.notes.push(badValuesNote(`legacy:${n.value.object}`, n.value.badValues, n.value.raw));
        break;
      case 'quarantine':
        sorted.quarantine.push(n.value);
        break;
    }
  }
  if (!options.encodeAhead || sorted.records.length < COPY_FROM_RECORDS) return { batch, sorted };
  const encoded = new Map<NormalizedRecord, EncodedCopyRow>();
  for (let i = 0; i < sorted.records.length; i += 1) {
    if (i > 0 && i % ITEMS_PER_TURN === 0) await setImmediate();
    const record = sorted.records[i]!;
    encoded.set(record, encodeNewRecord(batch.orgId, batch.arrivedVia, record));
  }
  return { batch, sorted, encoded };
}

/** `applyPreparedBatch` of a batch not prepared yet: it is prepared here, the rest passed on as it is. */
export async function applyBatch(
  warehouse: Warehouse,
  batch: Batch,
  ...rest: [progress?: BatchProgress, options?: ApplyBatchOptions]
): Promise<LoadResult> {
  return await applyPreparedBatch(warehouse, await prepareBatch(batch), ...rest);
}

export async function applyPreparedBatch(
  warehouse: Warehouse,
  prepared: PreparedBatch,
  progress: BatchProgress = {},
  options: ApplyBatchOptions = {},
): Promise<LoadResult> {
  const attributes = {
    'validic.org': prepared.batch.orgId,
    'validic.arrived_via': prepared.batch.arrivedVia,
    'validic.items': prepared.batch.items.length,
  };
  return await withSpan('warehouse.apply_batch', attributes, () =>
    applyInTransaction(warehouse, prepared, progress, options),
  );
}

async function applyInTransaction(
  warehouse: Warehouse,
  prepared: PreparedBatch,
  progress: BatchProgress,
  options: ApplyBatchOptions,
): Promise<LoadResult> {
  const log = options.log ?? silentLogger;
  const { batch, sorted } = prepared;
  const result: LoadResult = emptyLoadResult();
  const probe = probeStatement(batch.orgId, sorted.records);
  const startTimes = sorted.records.map((r) => r.record.startTime);
  const locks = loadLocks(batch.orgId, sorted);
  // The records' probe rides in the BEGIN round trip, after the locks (load-transaction.ts).
  const write = () =>
    loadTransaction(warehouse, { locks, probe }, async (tx, probed) => {
      await writeQuarantine(tx, batch, sorted.quarantine, result);
      await writeQuarantine(tx, batch, sorted.notes, result, { counted: false });
      await loadUsers(tx, batch, sorted.users, result);
      await loadConnectionEvents(tx, batch, sorted.events, result);
      await loadLegacy(tx, batch, sorted.legacy, result);
      // Last, so that the progress can ride along with the records' statement (one round trip less).
      const progressSql = progressCtes(batch.orgId, progress);
      const { sentAlso } = await loadRecords(
        tx,
        batch,
        sorted.records,
        result,
        progressSql,
        probed,
        prepared.encoded,
      );
      if (!sentAlso && progressSql.length > 0) await writeProgress(tx, batch.orgId, progress);
    });
  // Outside the transaction, before it: adding a month locks the default partitions, which a load's
  // own statements use (month-partitions.ts). A month that exists costs nothing here.
  await ensureMonthPartitions(warehouse, startTimes);
  let transactionRetries = 0;
  // A transaction rolled back for a deadlock, a serialization failure or a lock timeout runs again from
  // the start: it is idempotent (load-transaction.ts).
  await retryOnConflict(
    async () => {
      Object.assign(result, emptyLoadResult());
      try {
        await write();
      } catch (error) {
        // A month this process knew was detached or dropped since: look again, add it, write once more.
        if (!isMissingMonthPartition(error)) throw error;
        forgetMonthPartitions(warehouse);
        await ensureMonthPartitions(warehouse, startTimes);
        Object.assign(result, emptyLoadResult());
        await write();
      }
    },
    {
      onRetry: ({ code, attempt, delayMs, error }) => {
        transactionRetries += 1;
        reportTransactionRetry(warehouse, code);
        log.warn(
          { orgId: batch.orgId, arrivedVia: batch.arrivedVia, code, attempt, delayMs, err: error },
          'load transaction rolled back by a conflict with another; running it again',
        );
      },
    },
  );
  result.transactionRetries = transactionRetries;

  let newest: string | null = null;
  for (const r of sorted.records)
    if (newest === null || r.record.createdAt > newest) newest = r.record.createdAt;
  for (const e of sorted.events)
    if (e.createdAt && (newest === null || e.createdAt > newest)) newest = e.createdAt;
  result.newestCreatedAt = newest;
  log.debug(
    { orgId: batch.orgId, arrivedVia: batch.arrivedVia, items: batch.items.length, ...countsOnly(result) },
    'batch loaded',
  );
  return result;
}

/**
 * Above this many keys a batch locks its whole org instead. The server's lock table is finite: it holds
 * max_locks_per_transaction (default 64) × max_connections (default 100) = 6,400 locks, shared by all
 * sessions. 256 covers a records.poll job (one user's 30-day window of every resource, ~200 records in
 * the benches) and keeps a fleet of 4 workers × 4 concurrent loads under 4,100 locks.
 */
export const MAX_KEY_LOCKS = 256;

/**
 * The locks that make the probe-then-decide steps race-free. A small batch (a poll window) locks
 * only the keys it writes, each record id, user uid and legacy id exclusively, plus its org shared:
 * loads of disjoint keys (the windows of a backfill) then run side by side, loads sharing a key
 * serialize. A big batch (stream micro-batches, legacy pages) locks its org exclusively, which waits
 * for every small load of the org and blocks new ones. Connection events (immutable, insert-if-absent)
 * and quarantine (an upsert that only counts) are safe under concurrency without a key lock.
 */
export function loadLocks(orgId: string, sorted: Pick<Sorted, 'records' | 'users' | 'legacy'>): LoadLocks {
  const org = `validic-sync:load:${orgId}`;
  const keys = new Set<string>();
  for (const r of sorted.records) keys.add(`${org}:record:${r.record.id}`);
  for (const u of sorted.users) keys.add(`${org}:user:${u.uid}`);
  for (const l of sorted.legacy) keys.add(`${org}:legacy:${l.object}:${l.id}`);
  if (keys.size > MAX_KEY_LOCKS) return { exclusive: [org] };
  return { shared: [org], exclusive: [...keys] };
}

function countsOnly(result: LoadResult): LoadCounts {
  const { inserted, updated, unchanged, stale, quarantined } = result;
  return { inserted, updated, unchanged, stale, quarantined };
}
