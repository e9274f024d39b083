/** Connection events keyed (org_id, id): immutable, so an id already stored is never written again. */
import { sql } from 'kysely';
import type { ConnectionEventRow } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import { bump } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';
import { STAGE, stageRows } from './staging-tables.ts';
import { CONNECTION_EVENTS, columnList, columnsOf } from './table-columns.ts';

export async function loadConnectionEvents(
  tx: WarehouseTransaction,
  batch: Batch,
  events: ConnectionEventRow[],
  result: LoadResult,
) {
  if (events.length === 0) return;
  const byId = new Map<string, ConnectionEventRow>();
  for (const e of events) if (!byId.has(e.id)) byId.set(e.id, e);
  await stageRows(tx, STAGE.events, [...byId.values()].map(CONNECTION_EVENTS.values));
  // Events are immutable: an id already stored is never written again.
  const written = await sql<{ id: string }>`
    insert into validic.connection_events (org_id, ${columnList(CONNECTION_EVENTS)}, arrived_via)
    select ${batch.orgId}, ${columnsOf(CONNECTION_EVENTS, 's')}, ${batch.arrivedVia}
    from ${sql.table(STAGE.events.name)} s
    where not exists (select 1 from validic.connection_events e where e.org_id = ${batch.orgId} and e.id = s.id)
    on conflict (org_id, id) do nothing
    returning id`.execute(tx.db);
  bump(result, 'connection_event', 'inserted', written.rows.length);
  bump(result, 'connection_event', 'unchanged', events.length - written.rows.length);
}
