/**
 * The worker, not the platform, keeps requests under the token's limit: a backfill against a sandbox
 * that answers 429 past its budget gets none, while using most of the budget. bench/budget.ts measures
 * the use precisely over whole minutes; this asserts it loosely (the machine may be busy).
 *
 * The client knows only a per-hour limit, so the sandbox's window is 20 s with a limit of 400 and the
 * client is told 400 × 180 per hour: the same rate. (The client's burst of 20 fits in any fixed window
 * only from about 400 per window upward, which is why the window is not shorter.)
 */
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { useSandbox } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const WINDOW_MS = 20_000;
const LIMIT = 400;

describe('request budget', () => {
  // 24 users × 7 resources × 3 windows of 30 days ≈ 500 requests: more than one window's budget.
  const sandbox = useSandbox({
    seed: 5,
    users: 24,
    days: 3,
    faults: { requestBudget: { limit: LIMIT, windowMs: WINDOW_MS } },
  });
  const db = useTestDatabase();

  it('paces a backfill under the limit: no 429, and most of the budget used', async () => {
    const to = day(0);
    const from = day(80);
    const env = sandboxEnv(sandbox, {
      DATABASE_URL: db.url,
      VALIDIC_REQUESTS_PER_HOUR: String(LIMIT * (3_600_000 / WINDOW_MS)),
      VALIDIC_SYNC_CONCURRENCY: '8',
    });
    const started = Date.now();
    const result = await runCli(['backfill', '--from', from, '--to', to], env);
    const elapsedMs = Date.now() - started;
    expect(result.code, result.stderr).toBe(0);
    const stats = sandbox.control.stats();
    expect(stats.rateLimited).toBe(0);
    expect(stats.total).toBeGreaterThan(LIMIT);
    // Requests per window over the run, against the budget; loose, since process start-up and a busy
    // machine count against it.
    const used = stats.total / ((elapsedMs / WINDOW_MS) * LIMIT);
    expect(used).toBeGreaterThan(0.4);
    expect(used).toBeLessThanOrEqual(1);
  });
});
