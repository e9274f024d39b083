/**
 * A worker SIGKILLed in the middle of the first sync: the warehouse keeps what it had covered
 * (validic_sync.first_syncs, first_sync_polls), `status` still says the first sync is running, and the
 * restarted worker resumes it: the same first sync (its start unchanged), the users covered before the
 * kill not polled for it again (but for the polls the killed worker was running), every user covered in
 * the end, and the warehouse equal to the truth.
 * The worker as in test/helpers/first-start-scenario.ts (×120, 2,000 requests an hour), 300 users and
 * two resources: a first sync of about 10 s.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { firstStartEnv, readOrgStatus, waitForFirstSync } from '../helpers/first-start-scenario.ts';
import { useSandbox, useTempDir, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { startWorkerChild, type WorkerChild } from '../helpers/worker-fleet.ts';

const USERS = 300;
/** The worker's `worker.concurrency` (firstStartEnv). */
const CONCURRENCY = 8;
const mix = { measurement: 1, nutrition: 0, intraday: 0, summary: 1, workout: 0, sleep: 0, cgm: 0 };

describe('a worker killed in the middle of the first sync', () => {
  const sandbox = useSandbox({ seed: 62, users: USERS, days: 3, mix, pokeIntervalMs: 1000 });
  const db = useTestDatabase();
  const redis = useTestRedis('first-start-restart');
  const dir = useTempDir('first-start-restart-');

  const covered = async () => {
    const { rows } = await sql<{ uid: string; polled_at: Date }>`
      select uid, polled_at from validic_sync.first_sync_polls order by uid`.execute(db.warehouse.db);
    return rows;
  };

  it('resumes it after a restart instead of starting over', async () => {
    const env = await firstStartEnv({
      sandbox,
      databaseUrl: db.url,
      redis,
      dir,
      requestsPerHour: 2_000,
      resources: ['measurements', 'summaries'],
      // A killed worker's jobs are picked up again 2 s after its lock lapses, not 30.
      extra: { VALIDIC_WORKER_LOCK_MS: '2000' },
    });
    sandbox.control.startLiveFeed({ ratePerSecond: 5 });
    const workers: WorkerChild[] = [];
    try {
      workers.push(await startWorkerChild(env));
      await waitForStep(
        'a third of the users covered by the first sync',
        async () => expect((await covered()).length).toBeGreaterThanOrEqual(USERS / 3),
        { timeout: 120_000, interval: 100 },
      );
      workers[0]!.child.kill('SIGKILL');
      await workers[0]!.child.result;
      const before = await covered();
      const atKill = await readOrgStatus(env, sandbox.orgId);
      expect(atKill.firstSync).toMatchObject({ state: 'running', users: USERS });
      expect(atKill.firstSync.pending).toBe(USERS - before.length);
      expect(atKill.firstSync.pending).toBeGreaterThan(0);

      workers.push(await startWorkerChild(env));
      await waitForFirstSync(db.warehouse, 150_000);
      const done = (await readOrgStatus(env, sandbox.orgId)).firstSync;
      expect(done).toMatchObject({ state: 'complete', users: USERS, pending: 0 });
      // The same first sync, resumed: begun once, and what was covered was not polled for it again, but
      // for the polls the killed worker was running (their completion written, BullMQ's not: the next
      // worker runs them again), at most its concurrency.
      expect(done.startedAt).toBe(atKill.firstSync.startedAt);
      const after = new Map((await covered()).map((r) => [r.uid, r.polled_at.getTime()]));
      expect(after.size).toBe(USERS);
      const polledAgain = before.filter((r) => after.get(r.uid) !== r.polled_at.getTime()).map((r) => r.uid);
      expect(polledAgain.length, polledAgain.join(', ')).toBeLessThanOrEqual(CONCURRENCY);

      sandbox.control.stopLiveFeed();
      await waitForStep(
        'the warehouse to equal the truth',
        async () => expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES),
        { timeout: 60_000, interval: 500 },
      );
      const stopped = await workers[1]!.stop();
      expect(stopped.code, stopped.stderr.slice(-2000)).toBe(0);
    } finally {
      sandbox.control.stopLiveFeed();
      for (const w of workers) w.child.kill('SIGKILL');
      await Promise.all(workers.map((w) => w.child.result));
    }
  }, 300_000);
});
