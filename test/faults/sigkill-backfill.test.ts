import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { recordFaultRun } from './fault-results.ts';
import { backfillArgs, countAgainstTruth, seededRandom, waitForWindowsDone } from './oracle.ts';
import { inScenario, type Scenario } from './scenario.ts';

const RUNS = 20;
const DAYS = 35;

describe('fault sigkill-backfill', () => {
  it(`survives ${RUNS} seeded SIGKILLs of a running backfill`, async () => {
    // How long a whole backfill of this size takes on this machine (start-up and migrations included),
    // so that the time-based kills below fall inside one rather than after it has finished. The shorter
    // of two (the first is cold), and shorter still whenever a run finishes before its kill: a measure
    // taken while the machine was busier would put later kills after the end.
    let wholeMs = Math.min(await timeWholeBackfill(), await timeWholeBackfill());
    const landed: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const random = seededRandom(9_000 + run);
      await backfillScenario(100 + run, async ({ sandbox, db, env }) => {
        const started = performance.now();
        const child = spawnCli(backfillArgs(DAYS), env);
        let exited = false;
        let tookMs = Infinity;
        void child.result.then(() => {
          exited = true;
          tookMs = performance.now() - started;
        });
        let point: string;
        if (run % 2 === 0) {
          // Anywhere in the run, start-up and migrations included.
          const delayMs = Math.floor(random() * wholeMs * 0.9);
          point = `after ${delayMs} ms`;
          await new Promise((resolve) => setTimeout(resolve, delayMs));
        } else {
          // Once a seeded share of the windows has committed (not so close to the end that it finishes first).
          const share = random() * 0.9;
          point = `after ${Math.round(share * 100)} % of the windows`;
          await waitForWindowsDone(db.warehouse.db, share, () => exited);
        }
        child.kill('SIGKILL');
        const killed = await child.result;
        if (killed.signal === 'SIGKILL') landed.push(point);
        else wholeMs = Math.min(wholeMs, tookMs);

        const resumed = await runCli(backfillArgs(DAYS), env);
        expect(resumed.code, `run ${run} (${point}): ${resumed.stderr}`).toBe(0);
        const counts = await countAgainstTruth(db.warehouse, sandbox);
        recordFaultRun('sigkill-backfill', counts);
        expect(counts.differences, `run ${run} killed ${point}`).toEqual(NO_DIFFERENCES);
      });
    }
    // The kills must mostly land while the backfill runs, or the scenario proves nothing.
    expect(
      landed.length,
      `kills that landed before the backfill ended (a whole one took ${Math.round(wholeMs)} ms): ${landed.join('; ')}`,
    ).toBeGreaterThanOrEqual(RUNS * 0.75);
  });
});

/** A sandbox seeded with `seed` and a fresh database (scenario.ts), with the backfill's environment. */
const backfillScenario = <T>(seed: number, fn: (s: Scenario & { env: NodeJS.ProcessEnv }) => Promise<T>) =>
  inScenario({ seed, users: 3, days: DAYS, faults: { latencyMs: 3 } }, (s) =>
    fn({ ...s, env: sandboxEnv(s.sandbox, { DATABASE_URL: s.db.url, VALIDIC_SYNC_CONCURRENCY: '2' }) }),
  );

async function timeWholeBackfill(): Promise<number> {
  return await backfillScenario(100, async ({ env }) => {
    const started = performance.now();
    const result = await runCli(backfillArgs(DAYS), env);
    expect(result.code, result.stderr).toBe(0);
    return performance.now() - started;
  });
}
