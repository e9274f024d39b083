/**
 * The write limit a loader is compared with: the same normalized rows COPYed straight into empty copies
 * of the warehouse tables (`create table … (like validic.x including all)`: same columns, defaults,
 * checks and primary-key indexes), one COPY per table, no staging, no dedupe, no checkpoint.
 * Normalization happens before the clock starts: only the write is timed.
 */
import { sql } from 'kysely';
import { normalizeItem } from '../../src/normalize/normalize-item.ts';
import type { RawItem } from '../../src/warehouse/batch.ts';
import { connectionEventRowValues } from '../../src/warehouse/load-connection-events.ts';
import { userRowValues } from '../../src/warehouse/load-users.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { RECORD_COLUMNS, recordRowValues } from '../../src/warehouse/record-row.ts';

interface CopyTable {
  name: string;
  columns: string[];
  rows: unknown[][];
}

const TABLES: Record<string, string[]> = {
  records: ['org_id', ...RECORD_COLUMNS.map((c) => c.name), 'arrived_via'],
  users: [
    'org_id',
    'uid',
    'user_id',
    'timezone',
    'country_code',
    'status',
    'marketplace_url',
    'created_at',
    'updated_at',
    'raw',
  ],
  connection_events: [
    'org_id',
    'id',
    'action',
    'uid',
    'user_id',
    'source_type',
    'created_at',
    'event_time',
    'deleted_at',
    'deleted_reason',
    'profile',
    'credentials',
    'raw',
    'arrived_via',
  ],
};

/** Normalized rows of `items`, per warehouse table, in the columns above (one row per distinct key). */
export function normalizedRows(orgId: string, items: readonly RawItem[]): CopyTable[] {
  const out = new Map<string, unknown[][]>(Object.keys(TABLES).map((t) => [t, []]));
  const push = (table: string, row: unknown[]) => out.get(table)!.push(row);
  // COPY into a primary key takes each key once; the loader keeps one version per key too.
  const seen = new Set<string>();
  for (const item of items) {
    const n = normalizeItem(item);
    if (n.kind === 'record') {
      const { record: r } = n.value;
      if (seen.has(`r${r.id}`)) continue;
      seen.add(`r${r.id}`);
      push('records', [orgId, ...recordRowValues(n.value), 'poll']);
    } else if (n.kind === 'user') {
      const u = n.value;
      if (seen.has(`u${u.uid}`)) continue;
      seen.add(`u${u.uid}`);
      push('users', [orgId, ...userRowValues(u)]);
    } else if (n.kind === 'connection_event') {
      const e = n.value;
      if (seen.has(`e${e.id}`)) continue;
      seen.add(`e${e.id}`);
      push('connection_events', [orgId, ...connectionEventRowValues(e), 'poll']);
    }
  }
  return [...out]
    .filter(([, rows]) => rows.length > 0)
    .map(([name, rows]) => ({ name, columns: TABLES[name]!, rows }));
}

export interface CopyTiming {
  seconds: number;
  /** Rows COPYed per table. */
  rows: Record<string, number>;
}

/**
 * COPYs the tables into fresh `like` copies in schema `schema` (created here; dropped first if it
 * exists) and returns the COPY time only.
 */
export async function timeCopy(
  warehouse: Warehouse,
  tables: CopyTable[],
  schema = 'bench_copy',
): Promise<CopyTiming> {
  await sql.raw(`drop schema if exists ${schema} cascade`).execute(warehouse.db);
  await sql.raw(`create schema ${schema}`).execute(warehouse.db);
  for (const t of tables) {
    await sql
      .raw(`create table ${schema}.${t.name} (like validic.${t.name} including all)`)
      .execute(warehouse.db);
  }
  const rows: Record<string, number> = {};
  const started = process.hrtime.bigint();
  for (const t of tables) {
    await warehouse.copyRows(`${schema}.${t.name}`, t.columns, t.rows);
    rows[t.name] = t.rows.length;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await sql.raw(`drop schema ${schema} cascade`).execute(warehouse.db);
  return { seconds, rows };
}
