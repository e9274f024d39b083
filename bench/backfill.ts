/**
 * Backfill end to end: sandbox (own thread, zero latency) → warehouse through the real backfill (the
 * `records.backfill` job fanning out `records.poll` / `connections.reconcile` on the inline runner, as the
 * `backfill` command runs it), records/s divided by the slower of two limits measured in the same run
 * on the same pages: raw HTTP fetch + JSON.parse (undici, same concurrency), and raw COPY of the
 * resulting rows into empty copies of the tables. Target ≥ 0.5.
 * Run: `node bench/backfill.ts [--quick]`.
 */
import { sql } from 'kysely';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { normalizedRows, timeCopy } from './helpers/copy-baseline.ts';
import { runInlineBackfill } from './helpers/inline-backfill.ts';
import { rawFetch, type WindowSpec } from './helpers/raw-fetch.ts';
import { printFigure, quick, round } from './helpers/report.ts';
import { startSandboxThread } from './helpers/sandbox-thread.ts';

const TARGET = 0.5;
const CONCURRENCY = 4; // the product's default sync.concurrency

const sandbox = await startSandboxThread({
  seed: 3,
  users: quick ? 15 : 80,
  days: 30,
  now: new Date('2026-03-15T12:00:00Z'),
});
const db = await createTestDatabase();
try {
  const range = { from: '2026-02-14', to: '2026-03-15' };
  const backfill = await runInlineBackfill(
    { databaseUrl: db.url, sandbox: sandbox.info, concurrency: CONCURRENCY },
    range,
  );
  if (backfill.failures > 0) throw new Error(`backfill had ${backfill.failures} failed jobs`);

  // The same windows the backfill fetched, from its ledger.
  const { rows: windows } = await sql<WindowSpec>`
    select uid, resource, to_char(start_date, 'YYYY-MM-DD') as "startDate", to_char(end_date, 'YYYY-MM-DD') as "endDate"
    from validic_sync.backfill_windows order by window_key`.execute(db.warehouse.db);
  const fetched = await rawFetch(sandbox.info, windows, CONCURRENCY);
  const tables = normalizedRows(sandbox.info.orgId, fetched.items);
  await sql`checkpoint`.execute(db.warehouse.db);
  const copy = await timeCopy(db.warehouse, tables);

  const records = backfill.records;
  const limitSeconds = Math.max(fetched.seconds, copy.seconds);
  const ratio = limitSeconds / backfill.seconds;
  printFigure({
    name: 'backfill-end-to-end',
    value: round(ratio),
    target: `≥ ${TARGET}`,
    ok: ratio >= TARGET && fetched.records === records,
    raw: {
      records,
      windows: windows.length,
      backfill_seconds: round(backfill.seconds, 3),
      backfill_records_per_s: Math.round(records / backfill.seconds),
      backfill_requests: backfill.requests,
      backfill_counts: backfill.counts,
      raw_fetch_seconds: round(fetched.seconds, 3),
      raw_fetch_records_per_s: Math.round(fetched.records / fetched.seconds),
      raw_fetch_requests: fetched.requests,
      raw_fetch_mb: round(fetched.bytes / 1e6, 1),
      raw_copy_seconds: round(copy.seconds, 3),
      raw_copy_records_per_s: Math.round(records / copy.seconds),
      raw_copy_rows: copy.rows,
      bound_by: fetched.seconds >= copy.seconds ? 'http' : 'copy',
    },
  });
} finally {
  await db.drop();
  await sandbox.close();
}
