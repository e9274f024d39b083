/** Connection events keyed (org_id, id): immutable, so an id already stored is never written again. */
import { sql } from 'kysely';
import type { ConnectionEventRow } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import { bump } from './load-counts.ts';
import { STAGE, stageRows } from './staging-tables.ts';

export async function loadConnectionEvents(
  tx: WarehouseTransaction,
  batch: Batch,
  events: ConnectionEventRow[],
  result: LoadResult,
) {
  if (events.length === 0) return;
  const byId = new Map<string, ConnectionEventRow>();
  for (const e of events) if (!byId.has(e.id)) byId.set(e.id, e);
  await stageRows(tx, STAGE.events, [...byId.values()].map(connectionEventRowValues));
  // Events are immutable: an id already stored is never written again.
  const written = await sql<{ id: string }>`
    insert into validic.connection_events
      (org_id, id, action, uid, user_id, source_type, created_at, event_time, deleted_at, deleted_reason,
       profile, credentials, raw, arrived_via)
    select ${batch.orgId}, s.id, s.action, s.uid, s.user_id, s.source_type, s.created_at, s.event_time,
           s.deleted_at, s.deleted_reason, s.profile, s.credentials, s.raw, ${batch.arrivedVia}
    from validic_stage_connection_events s
    where not exists (select 1 from validic.connection_events e where e.org_id = ${batch.orgId} and e.id = s.id)
    on conflict (org_id, id) do nothing
    returning id`.execute(tx.db);
  bump(result, 'connection_event', 'inserted', written.rows.length);
  bump(result, 'connection_event', 'unchanged', events.length - written.rows.length);
}

/** The values of one `validic.connection_events` row, in the column order of its staging table. */
export function connectionEventRowValues(e: ConnectionEventRow): unknown[] {
  return [
    e.id,
    e.action,
    e.uid,
    e.userId,
    e.sourceType,
    e.createdAt,
    e.eventTime,
    e.deletedAt,
    e.deletedReason,
    e.profile,
    e.credentials,
    e.raw,
  ];
}
