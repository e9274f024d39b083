/**
 * The loader: applies one batch and its checkpoint in ONE transaction (DESIGN.md, "One path for data").
 *
 * 1. Normalize every item (pure; bad items become quarantine entries, never exceptions).
 * 2. Reduce within the batch: per record id the newest version (later created_at; tie: the greater
 *    checksum, so the outcome never depends on arrival order) is the candidate; the others are kept
 *    for record_versions.
 * 3. In one transaction, under a per-org advisory lock (loads of one org never interleave, so the
 *    decisions below cannot race): probe the stored versions with ONE keys-only query (a redelivered
 *    batch costs no more than that), decide per id (insert / update / same / stale), then COPY only the
 *    rows to write into session temp tables and apply them set-based: archive replaced and older
 *    versions, upsert records, replace child rows of inserted/updated records only. Users, connection
 *    events and legacy records are staged and upserted the same way; quarantine is written, cursors
 *    move and ledger windows are marked done in the same transaction.
 *
 * Duplicates are filtered BEFORE writing (not by ON CONFLICT … WHERE), so redelivering a batch writes
 * no tuple at all in `validic`: no dead tuples, no WAL, no index churn. Statement count per batch is
 * constant; nothing is done per row.
 */
import { sql } from 'kysely';
import { type Logger, silentLogger } from '../log/logger.ts';
import { normalizeItem } from '../normalize/normalize-item.ts';
import type {
  ConnectionEventRow,
  LegacyRecordRow,
  NormalizedRecord,
  QuarantineEntry,
  UserRow,
} from '../normalize/normalized-types.ts';
import type { Batch, Checkpoint, LoadCounts, LoadResult } from './batch.ts';
import { loadConnectionEvents } from './load-connection-events.ts';
import { emptyLoadResult } from './load-counts.ts';
import { loadLegacy } from './load-legacy-records.ts';
import { isNewerVersion, loadRecords } from './load-records.ts';
import { loadUsers } from './load-users.ts';
import type { Warehouse } from './open-warehouse.ts';
import { writeCheckpoint } from './write-checkpoint.ts';
import { writeQuarantine } from './write-quarantine.ts';

export { isNewerVersion };

export interface ApplyBatchOptions {
  log?: Logger;
}

interface Sorted {
  records: NormalizedRecord[];
  users: UserRow[];
  events: ConnectionEventRow[];
  legacy: LegacyRecordRow[];
  quarantine: QuarantineEntry[];
}

function sortItems(batch: Batch): Sorted {
  const out: Sorted = { records: [], users: [], events: [], legacy: [], quarantine: [] };
  for (const item of batch.items) {
    const n = normalizeItem(item);
    switch (n.kind) {
      case 'record':
        out.records.push(n.value);
        break;
      case 'user':
        out.users.push(n.value);
        break;
      case 'connection_event':
        out.events.push(n.value);
        break;
      case 'legacy':
        out.legacy.push(n.value);
        break;
      case 'quarantine':
        out.quarantine.push(n.value);
        break;
    }
  }
  return out;
}

export async function applyBatch(
  warehouse: Warehouse,
  batch: Batch,
  checkpoint: Checkpoint = {},
  options: ApplyBatchOptions = {},
): Promise<LoadResult> {
  const log = options.log ?? silentLogger;
  const sorted = sortItems(batch);
  const result: LoadResult = emptyLoadResult();

  await warehouse.transaction(async (tx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`validic-sync:load:${batch.orgId}`}, 0))`.execute(
      tx.db,
    );
    await writeQuarantine(tx, batch, sorted.quarantine, result);
    await loadUsers(tx, batch, sorted.users, result);
    await loadConnectionEvents(tx, batch, sorted.events, result);
    await loadRecords(tx, batch, sorted.records, result);
    await loadLegacy(tx, batch, sorted.legacy, result);
    await writeCheckpoint(tx, batch.orgId, checkpoint);
  });

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

function countsOnly(result: LoadResult): LoadCounts {
  const { inserted, updated, unchanged, stale, quarantined } = result;
  return { inserted, updated, unchanged, stale, quarantined };
}
