/**
 * Redis restarted under a process that uses it: `validic-sync backfill` with REDIS_URL keeps its request
 * budget (a token bucket) in a PRIVATE Redis (private-redis.ts), which is SIGKILLed at seeded moments and
 * started again on the same port after a seeded pause, losing every key. The CLI waits Redis out and
 * carries on (or fails visibly); running it again finishes, and the warehouse equals the truth.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ledgerProgress } from '../helpers/backfill-progress.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { useBeforeAll } from '../helpers/use-before-all.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { recordFaultRun } from './fault-results.ts';
import { countAgainstTruth, expectFinishedOrRerun, seededRandom } from './oracle.ts';
import { startPrivateRedis } from './private-redis.ts';
import { inScenario, startBackfill } from './scenario.ts';

const DAYS = 35;
const RUNS = 3;

async function budgetKeys(url: string): Promise<number> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return (await client.keys('validic-sync:budget:*')).length;
  } finally {
    client.disconnect();
  }
}

describe('fault redis-restart', () => {
  const redis = useBeforeAll(startPrivateRedis, (r) => r.stop());

  it(`lands exactly the truth after ${RUNS} seeded runs with Redis restarted mid-run`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const random = seededRandom(8_800 + run);
      await inScenario(
        { seed: 800 + run, users: 3, days: DAYS, faults: { latencyMs: 3 } },
        async ({ sandbox, db }) => {
          const env = sandboxEnv(sandbox, {
            DATABASE_URL: db.url,
            REDIS_URL: redis.url,
            VALIDIC_SYNC_CONCURRENCY: '3',
          });
          const backfill = startBackfill(DAYS, env);
          const restarts: string[] = [];
          let rewritten = 0;
          for (const share of [random() * 0.4, 0.4 + random() * 0.4]) {
            await waitForStep(
              `requests for ${Math.round(share * 100)} % of the ledger windows made`,
              async () => {
                if (backfill.finished()) return;
                const { total } = await ledgerProgress(db.warehouse.db);
                expect(total).toBeGreaterThan(0);
                // Mid-run by requests made (one per ledger window), not by windows done: a job loads a
                // user's resources together, so windows turn done in bursts near the end of its requests.
                expect(sandbox.control.stats().total).toBeGreaterThanOrEqual(Math.floor(share * total));
              },
              { timeout: 60_000, interval: 10 },
            );
            if (backfill.finished()) break;
            await redis.kill();
            const pauseMs = 100 + Math.floor(random() * 1500);
            await new Promise((resolve) => setTimeout(resolve, pauseMs));
            await redis.start();
            restarts.push(`at ${share.toFixed(2)} down ${pauseMs} ms`);
            // The budget lives in this Redis: a request after the restart writes its bucket key again.
            // Looked for now, not after the run: the key expires about a second after the last request,
            // and the CLI's exit can take longer than that (it did once in CI).
            await waitForStep(
              'the budget key written again in the restarted Redis, or the backfill done',
              async () => {
                if ((await budgetKeys(redis.url)) > 0) {
                  rewritten++;
                  return;
                }
                expect(backfill.finished()).toBe(true);
              },
              { timeout: 60_000, interval: 10 },
            );
          }
          const first = await backfill.result;
          await expectFinishedOrRerun(first, DAYS, env);
          expect(restarts.length).toBeGreaterThan(0);
          expect(rewritten, 'no budget key after any restart').toBeGreaterThan(0);
          const counts = await countAgainstTruth(db.warehouse, sandbox);
          recordFaultRun('redis-restart', counts);
          expect(counts.differences, `run ${run}: ${restarts.join(', ')}`).toEqual(NO_DIFFERENCES);
        },
      );
    }
  });
});
