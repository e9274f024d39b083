import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { recordFaultRun } from './fault-results.ts';
import {
  backfillArgs,
  countAgainstTruth,
  expectFinishedOrRerun,
  seededRandom,
  waitForWindowsDone,
} from './oracle.ts';
import { inScenario, startBackfill } from './scenario.ts';

const DAYS = 35;
const RUNS = 4;

describe('fault postgres-cut', () => {
  it(`lands exactly the truth after ${RUNS} seeded runs with database connections cut mid-load`, async () => {
    await Promise.all(
      Array.from({ length: RUNS }, async (_, run) => {
        const random = seededRandom(5_500 + run);
        await inScenario(
          { seed: 600 + run, users: 3, days: DAYS, faults: { latencyMs: 3 } },
          async ({ sandbox, db, onCleanup }) => {
            const proxy = await startTcpProxy({ targetPort: Number(new URL(db.url).port || 5432) });
            onCleanup(() => proxy.close());
            const env = sandboxEnv(sandbox, {
              DATABASE_URL: proxy.rewriteUrl(db.url),
              VALIDIC_SYNC_CONCURRENCY: '3',
            });
            const backfill = startBackfill(DAYS, env);
            const cuts: string[] = [];
            // Cut at seeded shares of the windows, up to three times per run.
            for (const share of [random() * 0.3, 0.3 + random() * 0.3, 0.6 + random() * 0.3]) {
              await waitForWindowsDone(db.warehouse.db, share, backfill.finished);
              if (backfill.finished()) break;
              if (random() < 0.5) {
                cuts.push(`reset ${proxy.reset()} at ${share.toFixed(2)}`);
              } else {
                const ms = 100 + Math.floor(random() * 900);
                cuts.push(`cut ${proxy.cut()} for ${ms} ms at ${share.toFixed(2)}`);
                await new Promise((resolve) => setTimeout(resolve, ms));
                proxy.restore();
              }
            }
            const first = await backfill.result;
            if (!(await expectFinishedOrRerun(first, DAYS, env))) {
              // A clean exit after a cut means the loader retried; the same command again is a no-op.
              const again = await runCli(backfillArgs(DAYS), env);
              expect(again.code, again.stderr).toBe(0);
            }
            const counts = await countAgainstTruth(db.warehouse, sandbox);
            recordFaultRun('postgres-cut', counts);
            expect(counts.differences, `run ${run}: ${cuts.join(', ')}`).toEqual(NO_DIFFERENCES);
            expect(cuts.length).toBeGreaterThan(0);
            if (process.env.DEBUG_FAULTS)
              console.log(run, first.code, cuts, first.stdout, first.stderr.slice(0, 2000));
          },
        );
      }),
    );
  });
});
