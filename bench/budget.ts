/**
 * Budget: with a tight platform budget (sandbox fault `requestBudget: { limit: N, windowMs: 60 s }`,
 * fixed windows of the sandbox clock) and the client told the same limit (`requestsPerHour` = N × 60),
 * a backfill with far more windows than the budget allows uses 0.85–0.98 of every full window, and
 * draws no 429. Windows are counted by the sandbox (requests per token per minute of its clock); the
 * first, partial minute and the minute the run is stopped in are left out.
 * Run: `node bench/budget.ts [--quick]` (quick: one full window instead of two).
 */
import { createTestDatabase } from '../test/helpers/pg.ts';
import { runInlineBackfill } from './helpers/inline-backfill.ts';
import { printFigure, quick, round } from './helpers/report.ts';
import { startSandboxThread } from './helpers/sandbox-thread.ts';

const LIMIT = 600; // requests per minute: 10/s, well within what a backfill of small windows can issue
const WINDOW_MS = 60_000;
const FULL_WINDOWS = quick ? 1 : 2;
const MIN = 0.85;
const MAX = 0.98;

const sandbox = await startSandboxThread({
  seed: 4,
  // 450 users × 7 resources ≈ 3,150 windows: more than the budget grants in the measured minutes.
  users: 450,
  days: 30,
  // Few records per window: the run is paced by the budget, not by loading.
  mix: {
    measurement: 0.2,
    nutrition: 0.2,
    intraday: 0.05,
    summary: 0.2,
    workout: 0.1,
    sleep: 0.2,
    cgm: 0.05,
  },
  faults: { requestBudget: { limit: LIMIT, windowMs: WINDOW_MS } },
});
const db = await createTestDatabase();
try {
  const start = await sandbox.now();
  const firstFull = Math.floor(start / WINDOW_MS) + 1;
  const stopAt = (firstFull + FULL_WINDOWS) * WINDOW_MS;
  const abort = new AbortController();
  const today = new Date(start).toISOString().slice(0, 10);
  const from = new Date(start - 29 * 86_400_000).toISOString().slice(0, 10);
  const running = runInlineBackfill(
    { databaseUrl: db.url, sandbox: sandbox.info, requestsPerHour: LIMIT * 60 },
    { from, to: today },
    abort.signal,
  );
  // Stop just after the last measured window closes (sandbox clock = real time from its anchor).
  const timer = setTimeout(() => abort.abort(), stopAt - start + 500);
  const outcome = await running;
  clearTimeout(timer);
  const stats = await sandbox.stats();
  const perMinute = stats.perTokenMinute[sandbox.info.token] ?? {};
  const measured: Record<string, number> = {};
  for (let w = firstFull; w < firstFull + FULL_WINDOWS; w++) {
    const minute = new Date(w * WINDOW_MS).toISOString().slice(0, 16);
    measured[minute] = perMinute[minute] ?? 0;
  }
  const ratios = Object.values(measured).map((n) => n / LIMIT);
  const finishedEarly = !abort.signal.aborted;
  const low = Math.min(...ratios);
  const high = Math.max(...ratios);
  printFigure({
    name: 'budget-use',
    value: round(low),
    unit: high !== low ? `… ${round(high)} of the budget per window` : 'of the budget per window',
    target: `${MIN}–${MAX}`,
    ok: !finishedEarly && low >= MIN && high <= MAX,
    raw: {
      budget: `${LIMIT} requests per ${WINDOW_MS / 1000} s window (client requestsPerHour ${LIMIT * 60})`,
      full_windows: measured,
      all_minutes: perMinute,
      backfill_requests: outcome.requests,
      backfill_by_status: outcome.byStatus,
      stopped_by_bench: !finishedEarly,
    },
  });
  printFigure({
    name: 'budget-429s',
    value: stats.rateLimited,
    target: '0',
    ok: stats.rateLimited === 0,
    raw: { sandbox_requests: stats.total, sandbox_429s: stats.rateLimited },
  });
} finally {
  await db.drop();
  await sandbox.close();
}
