/**
 * Loader: records/s from parsed pages to committed rows with their checkpoint (`applyBatch` with a
 * cursor, batches of ~1,000 records), divided by the COPY rows/s of the same normalized rows into empty
 * copies of the same tables, measured in the same run. Target ≥ 0.6.
 * Each round uses a fresh database; the best time of each side over the rounds is kept, so a burst of
 * other work on the shared machine does not decide the figure.
 * Run: `node bench/loader.ts [--quick]`.
 */
import { sql } from 'kysely';
import { applyBatch } from '../src/warehouse/loader/apply-batch.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { normalizedRows, timeCopy } from './helpers/copy-baseline.ts';
import { loaderInput } from './helpers/loader-data.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const TARGET = 0.6;
const ROUNDS = 2;

const input = await loaderInput(quick ? 3 : 10);
const tables = normalizedRows(input.orgId, input.items);
const loadTimes: number[] = [];
const copyTimes: number[] = [];
let inserted = 0;
let copyRows: Record<string, number> = {};
for (let i = 0; i < ROUNDS; i++) {
  const db = await createTestDatabase();
  try {
    const { warehouse } = db;
    // Start both timed phases from clean shared buffers, so neither pays for the other's dirty pages.
    await sql`checkpoint`.execute(warehouse.db);
    const started = process.hrtime.bigint();
    inserted = 0;
    for (const { batch, checkpoint } of input.batches) {
      inserted += (await applyBatch(warehouse, batch, checkpoint)).inserted;
    }
    loadTimes.push(secondsSince(started));
    await sql`checkpoint`.execute(warehouse.db);
    const copy = await timeCopy(warehouse, tables);
    copyTimes.push(copy.seconds);
    copyRows = copy.rows;
  } finally {
    await db.drop();
  }
}

const loadSeconds = Math.min(...loadTimes);
const copySeconds = Math.min(...copyTimes);
const loadRate = input.records / loadSeconds;
const copyRate = input.records / copySeconds;
const ratio = loadRate / copyRate;
printFigure({
  name: 'loader',
  value: round(ratio),
  target: `≥ ${TARGET}`,
  ok: ratio >= TARGET && inserted === input.records,
  raw: {
    records: input.records,
    by_type: input.byType,
    intraday_points: input.intradayPoints,
    batches: input.batches.length,
    inserted,
    loader_seconds_per_round: loadTimes.map((t) => round(t, 3)),
    loader_records_per_s: Math.round(loadRate),
    copy_seconds_per_round: copyTimes.map((t) => round(t, 3)),
    copy_records_per_s: Math.round(copyRate),
    copy_rows: copyRows,
  },
});
