/**
 * The worker's clock 20 minutes ahead of the platform's, and in another run 20 minutes behind (the
 * sandbox started with its clock shifted: every answer's Date and every `last_updated` it stamps are its
 * own time). Legacy sync rounds while records are added on the platform: the windows, the cursor and
 * the listing's end follow the platform's clock, so every record the platform holds up to its now
 * lands. With the worker's clock ahead, the old worker-clock cursor ran 20 minutes past the platform,
 * the next window started 10 minutes (the overlap) in the platform's future, and every record synced in
 * between was never listed. `status` shows the offset afterwards.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime } from '../../src/worker/runtime.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { compareLegacyWithTruth } from '../helpers/compare-legacy-with-truth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from './stream-compare.ts';

const MINUTE = 60_000;
const ROUNDS = 6;

describe('the worker and the platform disagree on the time', () => {
  const databases: TestDatabase[] = [];
  const sandboxes: Sandbox[] = [];
  afterAll(async () => {
    for (const sandbox of sandboxes) await sandbox.close();
    for (const db of databases) await db.drop();
  });

  it.each([
    ['ahead of', -20 * MINUTE],
    ['behind', 20 * MINUTE],
  ])(
    'the worker 20 minutes %s the platform: legacy sync rounds end equal to the platform, status shows the offset',
    async (_, skewMs) => {
      // skewMs: the platform's clock minus the worker's.
      const sandbox = await startSandbox({ seed: 21, users: 4, days: 2, now: new Date(Date.now() + skewMs) });
      sandboxes.push(sandbox);
      const db = await createTestDatabase();
      databases.push(db);
      const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
      const runtime = await openRuntime(loadConfig(env, {}), silentLogger, {
        warehouse: db.warehouse,
        useRedis: false,
      });
      const added: string[] = [];
      try {
        const runner = createInlineRunner(runtime, new AbortController().signal, 2);
        const failed: string[] = [];
        runner.on('failed', (job, error) => failed.push(`${job.name}: ${error.message}`));
        const users = sandbox.truth.legacyUsers();
        for (let round = 0; round < ROUNDS; round++) {
          for (const user of users.slice(0, 2)) {
            added.push(
              `fitness/${sandbox.control.addLegacyRecord({ object: 'fitness', user_id: user._id })._id}`,
            );
          }
          await runner.enqueue('legacy.sync', { orgId: sandbox.orgId, objects: ['fitness'] });
          await runner.drain();
          // A record stamped in the second a window ended is the next window's: let a second pass.
          await new Promise((resolve) => setTimeout(resolve, 1100));
        }
        await runner.enqueue('legacy.sync', { orgId: sandbox.orgId, objects: ['fitness'] });
        await runner.drain();
        expect(failed).toEqual([]);
        const reading = runtime.platformClock.reading();
        expect(Math.abs(reading.offsetMs - skewMs)).toBeLessThanOrEqual(reading.uncertaintyMs + 1000);
      } finally {
        await runtime.close();
      }

      const differences = await compareLegacyWithTruth(db.warehouse, sandbox);
      const platformNow = Date.parse(sandbox.control.now());
      const fitness = (keys: string[]) => keys.filter((k) => k.startsWith('fitness/'));
      // Only what the platform stamped ahead of its own clock (generated late syncs) may still wait.
      const stampedAhead = new Set(
        sandbox.truth
          .legacyRecords('fitness')
          .filter((r) => Date.parse(r.last_updated) > platformNow - 2000)
          .map((r) => `fitness/${r._id}`),
      );
      expect(fitness(differences.missing).filter((k) => !stampedAhead.has(k))).toEqual([]);
      expect(fitness(differences.missing).filter((k) => added.includes(k))).toEqual([]);
      expect(fitness(differences.wrongLastUpdated)).toEqual([]);

      const status = await runCli(['status', '--json'], env);
      expect(status.code, status.stderr).toBe(0);
      const clock = (JSON.parse(status.stdout) as { platformClock?: { offsetSeconds: number } })
        .platformClock;
      expect(Math.abs(clock!.offsetSeconds - skewMs / 1000)).toBeLessThanOrEqual(2);
      const text = await runCli(['status'], env);
      expect(text.stdout).toContain(`is 20 min ${skewMs < 0 ? 'ahead of' : 'behind'} the platform's`);

      // The stream under the same skew: what the platform logs while the command runs lands.
      const fromSeq = sandbox.truth.events().length;
      const cli = spawnCli(['stream', '--exit-when-idle', '3'], env);
      await waitForStep(
        'the stream to have one member',
        () => expect(sandbox.truth.streams()[0]?.members).toBe(1),
        {
          timeout: 30_000,
          interval: 20,
        },
      );
      sandbox.control.startLiveFeed({ ratePerSecond: 20 });
      await waitForStep(
        'the live feed to have logged 40 events',
        () => expect(sandbox.truth.events().length - fromSeq).toBeGreaterThan(40),
        { timeout: 20_000, interval: 20 },
      );
      sandbox.control.stopLiveFeed();
      const streamed = await cli.result;
      expect(streamed.code, streamed.stderr).toBe(0);
      expect(await compareStreamWithTruth(db.warehouse, sandbox, fromSeq)).toEqual(NO_STREAM_DIFFERENCES);
    },
  );
});
