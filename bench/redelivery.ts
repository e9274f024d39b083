/**
 * Redelivery: loading the same batches again (every record a duplicate) takes ≤ 0.3 of the first load's
 * time, and writes nothing in schema `validic`: n_tup_ins + n_tup_upd + n_tup_del summed over its tables
 * grows by 0. The warehouse has ONE connection, so the backend that loaded is the one whose statistics
 * are flushed (pg_stat_force_next_flush) before they are read with a fresh snapshot.
 * Run: `node bench/redelivery.ts [--quick]`.
 */
import { sql } from 'kysely';
import { applyBatch } from '../src/warehouse/loader/apply-batch.ts';
import { openWarehouse, type Warehouse } from '../src/warehouse/open-warehouse.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { loaderInput } from './helpers/loader-data.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const TARGET_RATIO = 0.3;

/** Tuples written in schema validic so far, as the statistics system has them after a forced flush. */
async function validicWrites(warehouse: Warehouse): Promise<number> {
  await sql`select pg_stat_force_next_flush()`.execute(warehouse.db);
  // The flush happens at the end of the statement's transaction; the next one reads a fresh snapshot.
  await sql`select pg_stat_clear_snapshot()`.execute(warehouse.db);
  const { rows } = await sql<{ writes: number }>`
    select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int8 as writes
    from pg_stat_user_tables where schemaname = 'validic'`.execute(warehouse.db);
  return Number(rows[0]?.writes ?? 0);
}

const input = await loaderInput(quick ? 3 : 10);
const db = await createTestDatabase();
const warehouse = await openWarehouse({ databaseUrl: db.url, maxConnections: 1 });
try {
  const load = async () => {
    const started = process.hrtime.bigint();
    const totals = { inserted: 0, updated: 0, unchanged: 0 };
    for (const { batch, checkpoint } of input.batches) {
      const r = await applyBatch(warehouse, batch, checkpoint);
      totals.inserted += r.inserted;
      totals.updated += r.updated;
      totals.unchanged += r.unchanged;
    }
    return { seconds: secondsSince(started), ...totals };
  };
  await sql`checkpoint`.execute(warehouse.db);
  const first = await load();
  const writesAfterFirst = await validicWrites(warehouse);
  await sql`checkpoint`.execute(warehouse.db);
  const again = await load();
  const writesAfterAgain = await validicWrites(warehouse);

  const ratio = again.seconds / first.seconds;
  const grown = writesAfterAgain - writesAfterFirst;
  printFigure({
    name: 'redelivery-time',
    value: round(ratio),
    target: `≤ ${TARGET_RATIO}`,
    ok: ratio <= TARGET_RATIO,
    raw: {
      records: input.records,
      batches: input.batches.length,
      first_load_seconds: round(first.seconds, 3),
      redelivery_seconds: round(again.seconds, 3),
      first_load: { inserted: first.inserted, updated: first.updated, unchanged: first.unchanged },
      redelivery: { inserted: again.inserted, updated: again.updated, unchanged: again.unchanged },
    },
  });
  printFigure({
    name: 'redelivery-tuples-written',
    value: grown,
    target: '0',
    ok: grown === 0 && again.unchanged === input.records,
    raw: {
      validic_writes_after_first_load: writesAfterFirst,
      validic_writes_after_redelivery: writesAfterAgain,
    },
  });
} finally {
  await warehouse.close();
  await db.drop();
}
