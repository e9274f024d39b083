/**
 * 429 and 5xx storms from the platform (sandbox faults) during `validic-sync backfill`: a storm rages
 * from the start and stops part-way (seeded), with and without `Retry-After`. The run either finishes or
 * fails visibly; either way, running it again finishes, and the warehouse equals the truth.
 */
import { describe, expect, it } from 'vitest';
import type { Faults } from '../../src/sandbox/index.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { recordFaultRun } from './fault-results.ts';
import { backfillArgs, countAgainstTruth, expectFinishedOrRerun, seededRandom } from './oracle.ts';
import { inScenario } from './scenario.ts';

const DAYS = 35;

interface Storm {
  kind: string;
  faults: (random: () => number) => Partial<Faults>;
}

const storms: Storm[] = [
  {
    kind: 'http-429-storm',
    faults: (random) => ({
      rate429: 0.3 + random() * 0.3,
      retryAfterSeconds: random() < 0.5 ? null : 0,
    }),
  },
  {
    kind: 'http-5xx-storm',
    faults: (random) => ({
      rate5xx: 0.3 + random() * 0.3,
      status5xx: [500, 502, 503, 504][Math.floor(random() * 4)]!,
      truncateRate: random() * 0.1,
    }),
  },
];

const RUNS = 3;

describe.each(storms)('fault $kind', ({ kind, faults }) => {
  // The runs mostly wait out back-offs, so they run side by side, each with its own sandbox and database.
  it(`lands exactly the truth after ${RUNS} seeded storms`, async () => {
    const runs = Array.from({ length: RUNS }, (_, run) => stormRun(kind, faults, run));
    await Promise.all(runs);
  });
});

async function stormRun(kind: string, faults: Storm['faults'], run: number): Promise<void> {
  const random = seededRandom(7_700 + run * 31 + kind.length);
  const stormFaults = faults(random);
  await inScenario(
    { seed: 300 + run, users: 3, days: DAYS, faults: stormFaults },
    async ({ sandbox, db }) => {
      const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONCURRENCY: '3' });
      const stormRequests = 30 + Math.floor(random() * 60);
      const cli = runCli(backfillArgs(DAYS), env);
      // The storm passes after a seeded number of requests (or with the run, whichever is first).
      const calm = setInterval(() => {
        if (sandbox.control.stats().total >= stormRequests) {
          sandbox.control.resetFaults();
          clearInterval(calm);
        }
      }, 20);
      const first = await cli;
      clearInterval(calm);
      expect(first.stderr).not.toContain(sandbox.token);
      sandbox.control.resetFaults();
      await expectFinishedOrRerun(first, DAYS, env);
      expect(sandbox.control.stats().rateLimited + countErrors(sandbox)).toBeGreaterThan(0);
      const counts = await countAgainstTruth(db.warehouse, sandbox);
      recordFaultRun(kind, counts);
      expect(counts.differences, `${kind} run ${run} ${JSON.stringify(stormFaults)}`).toEqual(NO_DIFFERENCES);
    },
  );
}

/** Fault answers the sandbox gave (5xx), from its per-endpoint status counts. */
function countErrors(sandbox: {
  control: { stats(): { byEndpoint: Record<string, Record<string, number>> } };
}) {
  let n = 0;
  for (const statuses of Object.values(sandbox.control.stats().byEndpoint))
    for (const [status, count] of Object.entries(statuses))
      if (status.startsWith('5') || status === '429') n += count;
  return n;
}
