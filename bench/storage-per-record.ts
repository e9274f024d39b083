/**
 * Storage per record: warehouse bytes of schema `validic` and its monthly partitions (schema
 * `validic_partitions`; tables, TOAST and indexes, from
 * `pg_total_relation_size`, less the same for the empty migrated schema) per loaded record, as a ratio to
 * the bytes of the JSON the platform sent for them. Target ≤ 1.0 (issue "The warehouse at a year of a
 * large population"). Records of every type in the sandbox's default mix (30 days, one user's intraday
 * and CGM at the sandbox's default interval) are loaded through the real loader, then the tables are
 * VACUUMed so dead tuples of the load do not count. The per-table breakdown shows where the bytes go.
 * Run: `node bench/storage-per-record.ts [--quick]`.
 */
import { sql } from 'kysely';
import { startSandbox } from '../src/sandbox/index.ts';
import { RESOURCE_TYPES } from '../src/sandbox/types.ts';
import { applyBatch } from '../src/warehouse/apply-batch.ts';
import type { RawItem } from '../src/warehouse/batch.ts';
import type { Warehouse } from '../src/warehouse/open-warehouse.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { printFigure, quick, round } from './helpers/report.ts';

const TARGET = 1.0;
const BATCH_SIZE = 1000;

async function relationBytes(warehouse: Warehouse): Promise<Record<string, number>> {
  const { rows } = await sql<{ name: string; bytes: string }>`
    select c.relname as name, pg_total_relation_size(c.oid)::text as bytes
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname in ('validic', 'validic_partitions') and c.relkind in ('r', 'm')`.execute(warehouse.db);
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
}

const sandbox = await startSandbox({
  seed: 11,
  users: quick ? 20 : 100,
  days: 30,
  now: new Date('2026-03-15T12:00:00Z'),
});
const items: RawItem[] = [];
let jsonBytes = 0;
const byType: Record<string, number> = {};
for (const user of sandbox.truth.users()) {
  for (const type of RESOURCE_TYPES) {
    // Page bodies as the platform sends them: `{"data":[…]}` per user and resource.
    const records = sandbox.truth.records({ uid: user.uid, type });
    const body = JSON.stringify({ data: records });
    jsonBytes += Buffer.byteLength(body);
    for (const raw of JSON.parse(body).data) items.push({ kind: 'record', raw });
    byType[type] = (byType[type] ?? 0) + records.length;
  }
}
const orgId = sandbox.orgId;
await sandbox.close();

const db = await createTestDatabase();
try {
  const empty = await relationBytes(db.warehouse);
  let inserted = 0;
  for (let i = 0; i < items.length; i += BATCH_SIZE) {
    const batch = { orgId, arrivedVia: 'poll' as const, items: items.slice(i, i + BATCH_SIZE) };
    inserted += (await applyBatch(db.warehouse, batch, { cursors: [] })).inserted;
  }
  await sql`vacuum`.execute(db.warehouse.db);
  const loaded = await relationBytes(db.warehouse);
  const perTable = Object.fromEntries(
    Object.entries(loaded)
      .map(([name, bytes]) => [name, bytes - (empty[name] ?? 0)] as const)
      .filter(([, bytes]) => bytes > 0)
      .sort((a, b) => b[1] - a[1]),
  );
  const warehouseBytes = Object.values(perTable).reduce((a, b) => a + b, 0);
  const ratio = warehouseBytes / jsonBytes;
  printFigure({
    name: 'storage-per-record',
    value: round(ratio),
    target: `≤ ${TARGET}`,
    ok: ratio <= TARGET && inserted === items.length,
    raw: {
      records: items.length,
      inserted,
      by_type: byType,
      json_bytes: jsonBytes,
      json_bytes_per_record: Math.round(jsonBytes / items.length),
      warehouse_bytes: warehouseBytes,
      warehouse_bytes_per_record: Math.round(warehouseBytes / items.length),
      bytes_by_table: perTable,
    },
  });
} finally {
  await db.drop();
}
