/**
 * The write limit a loader is compared with: the same normalized rows the loader writes for a set of
 * items, COPYed straight into empty tables shaped like the warehouse's (`create table … (like
 * validic.x including all)`: same columns, types, compression, defaults, checks and every index; a
 * partitioned table gets the same partition key and the same partitions), one COPY per table, no
 * staging, no dedupe, no checkpoint. Normalization happens before the clock starts: only the write
 * (encoding the COPY text included, as in the loader's own COPY) is timed.
 *
 * Which tables are copied is ONE list, `COPIED_TABLES`. Benches check that it matches what the loader
 * wrote (`compareRowCounts`).
 */
import { sql } from 'kysely';
import { normalizeItem } from '../../src/normalize/normalize-item.ts';
import type { ArrivedVia, RawItem } from '../../src/pipeline/batch.ts';
import { ensureMonthPartitions } from '../../src/warehouse/loader/month-partitions.ts';
import { CONNECTION_EVENTS, RECORDS, USERS } from '../../src/warehouse/loader/record-rows.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';

interface CopyTable {
  name: string;
  columns: string[];
  rows: unknown[][];
}

/** Columns of each table the baseline can copy, after `org_id` … in the loader's value order. */
const names = (t: { columns: readonly { name: string }[] }) => t.columns.map((c) => c.name);
const COLUMNS: Record<string, string[]> = {
  records: ['org_id', ...names(RECORDS), 'arrived_via'],
  users: ['org_id', ...names(USERS)],
  connection_events: ['org_id', ...names(CONNECTION_EVENTS), 'arrived_via'],
};

/** Every table the baseline copies: what the loader writes for new records, users and connection events. */
export const COPIED_TABLES: readonly string[] = ['records', 'users', 'connection_events'];

/**
 * Normalized rows of `items` per copied table (COPIED_TABLES order), in the columns above, one row per
 * distinct key, with the `arrived_via` the loader would write for a batch of `arrivedVia`.
 */
export function normalizedRows(
  orgId: string,
  items: readonly RawItem[],
  arrivedVia: ArrivedVia = 'poll',
): CopyTable[] {
  const out = new Map<string, unknown[][]>(COPIED_TABLES.map((t) => [t, []]));
  const push = (table: string, row: unknown[]) => out.get(table)!.push(row);
  // COPY into a primary key takes each key once; the loader keeps one version per key too.
  const seen = new Set<string>();
  for (const item of items) {
    const n = normalizeItem(item);
    if (n.kind === 'record') {
      const { record: r } = n.value;
      if (seen.has(`r${r.id}`)) continue;
      seen.add(`r${r.id}`);
      push('records', [orgId, ...RECORDS.values(n.value), arrivedVia]);
    } else if (n.kind === 'user') {
      const u = n.value;
      if (seen.has(`u${u.uid}`)) continue;
      seen.add(`u${u.uid}`);
      push('users', [orgId, ...USERS.values(u)]);
    } else if (n.kind === 'connection_event') {
      const e = n.value;
      if (seen.has(`e${e.id}`)) continue;
      seen.add(`e${e.id}`);
      push('connection_events', [orgId, ...CONNECTION_EVENTS.values(e), arrivedVia]);
    }
  }
  return [...out]
    .filter(([, rows]) => rows.length > 0)
    .map(([name, rows]) => ({ name, columns: COLUMNS[name]!, rows }));
}

export interface CopyTiming {
  seconds: number;
  /** Rows COPYed per table. */
  rows: Record<string, number>;
}

/**
 * Creates `schema.name` shaped like `validic.name`: `like … including all` (columns, types, compression,
 * storage, defaults, checks, every index); a partitioned table also gets its partition key and each of
 * its partitions with the same bounds, so rows are routed and indexed as in the real table.
 */
async function createShapedLike(warehouse: Warehouse, schema: string, name: string): Promise<void> {
  const info = await sql<{ partkey: string | null }>`
    select case when c.relkind = 'p' then pg_get_partkeydef(c.oid) end as partkey
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'validic' and c.relname = ${name} and c.relkind in ('r', 'p')`.execute(warehouse.db);
  const table = info.rows[0];
  if (!table) throw new Error(`validic.${name} is not a table: update COPIED_TABLES (copy-baseline.ts)`);
  const partitionBy = table.partkey ? ` partition by ${table.partkey}` : '';
  await sql
    .raw(`create table ${schema}.${name} (like validic.${name} including all)${partitionBy}`)
    .execute(warehouse.db);
  if (!table.partkey) return;
  const parts = await sql<{ name: string; bound: string }>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${`validic.${name}`}::regclass`.execute(warehouse.db);
  for (const p of parts.rows) {
    await sql
      .raw(`create table ${schema}.${p.name} partition of ${schema}.${name} ${p.bound}`)
      .execute(warehouse.db);
  }
}

/**
 * Each column (name, type, compression, storage, not null, default) and each index definition (names
 * aside) of a table and of its partitions, as text: equal for the real table and its copy.
 */
async function shapeOf(warehouse: Warehouse, schema: string, name: string): Promise<string> {
  const rows = await sql<{ line: string }>`
    with rel as (
      select c.oid, c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relname = ${name}
      union all
      select c.oid, c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
      join pg_class p on p.oid = i.inhparent join pg_namespace n on n.oid = p.relnamespace
      where n.nspname = ${schema} and p.relname = ${name}
    )
    select line from (
      select rel.relname || ' col ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' '
             || a.attcompression::text || a.attstorage::text || a.attnotnull::text || ' '
             || coalesce(pg_get_expr(d.adbin, d.adrelid), '') as line
      from rel join pg_attribute a on a.attrelid = rel.oid and a.attnum > 0 and not a.attisdropped
      left join pg_attrdef d on d.adrelid = rel.oid and d.adnum = a.attnum
      union all
      select rel.relname || ' idx ' || regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', '')
      from rel join pg_index i on i.indrelid = rel.oid
    ) x order by line`.execute(warehouse.db);
  return rows.rows.map((r) => r.line).join('\n');
}

/**
 * COPYs the tables into fresh tables shaped like the real ones (createShapedLike) in schema `schema`
 * (created here; dropped first if it exists) and returns the COPY time only. Throws if a copy's shape
 * differs from its table's.
 */
export async function timeCopy(
  warehouse: Warehouse,
  tables: CopyTable[],
  schema = 'bench_copy',
): Promise<CopyTiming> {
  await sql.raw(`drop schema if exists ${schema} cascade`).execute(warehouse.db);
  await sql.raw(`create schema ${schema}`).execute(warehouse.db);
  // The months the rows reach get their partitions first, as the loader does before a batch; the
  // copies then take the same partitions.
  const records = tables.find((t) => t.name === 'records');
  if (records) {
    const start = records.columns.indexOf('start_time');
    await ensureMonthPartitions(
      warehouse,
      records.rows.map((row) => row[start] as string | null),
    );
  }
  for (const t of tables) {
    await createShapedLike(warehouse, schema, t.name);
    const [real, copy] = [
      await shapeOf(warehouse, 'validic', t.name),
      await shapeOf(warehouse, schema, t.name),
    ];
    if (real !== copy)
      throw new Error(`${schema}.${t.name} is not shaped like validic.${t.name}:\n${real}\n---\n${copy}`);
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

/**
 * Rows per table of schema `validic` (tables only, partitions counted in their parent), for checking
 * that the baseline copied exactly the tables and rows the loader wrote.
 */
export async function storedRowCounts(warehouse: Warehouse): Promise<Record<string, number>> {
  const tables = await sql<{ name: string }>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'validic' and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname`.execute(warehouse.db);
  const counts: Record<string, number> = {};
  for (const { name } of tables.rows) {
    const n = await sql<{
      n: number;
    }>`select count(*)::int as n from ${sql.table(`validic.${name}`)}`.execute(warehouse.db);
    if (n.rows[0]!.n > 0) counts[name] = n.rows[0]!.n;
  }
  return counts;
}

/** Tables whose row counts differ between what the loader stored and what the baseline copied ('' if none). */
export function rowCountMismatch(stored: Record<string, number>, copied: Record<string, number>): string {
  const names = [...new Set([...Object.keys(stored), ...Object.keys(copied)])].sort();
  return names
    .filter((n) => (stored[n] ?? 0) !== (copied[n] ?? 0))
    .map((n) => `${n}: loader ${stored[n] ?? 0}, copy ${copied[n] ?? 0}`)
    .join('; ');
}
