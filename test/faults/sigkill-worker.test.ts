/**
 * SIGKILL of a `validic-sync worker` (the real CLI) in the middle of a queued backfill, at seeded points;
 * a second worker takes over the dead one's jobs once their locks lapse (BullMQ's stalled-job check) and
 * finishes the run from the ledger. Each run ends compared with the sandbox's truth. Queues live in a
 * PRIVATE Redis (private-redis.ts), emptied between runs.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { waitForRunDoneAndQueueIdle } from '../helpers/backfill-progress.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { useBeforeAll } from '../helpers/use-before-all.ts';
import { openFleetJobQueue, startWorkerChild, type WorkerChild } from '../helpers/worker-fleet.ts';
import { recordFaultRun } from './fault-results.ts';
import { countAgainstTruth, seededRandom, waitForWindowsDone } from './oracle.ts';
import { startPrivateRedis } from './private-redis.ts';
import { inScenario } from './scenario.ts';

const DAYS = 35;
const RUNS = 3;
const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);

describe('fault sigkill-worker', () => {
  const redis = useBeforeAll(startPrivateRedis, (r) => r.stop());

  it(`lands exactly the truth after ${RUNS} seeded SIGKILLs of a worker mid-backfill`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const random = seededRandom(2_200 + run);
      await inScenario(
        { seed: 1000 + run, users: 3, days: DAYS, faults: { latencyMs: 10 } },
        async ({ sandbox, db, onCleanup }) => {
          const client = new Redis(redis.url, { maxRetriesPerRequest: null });
          onCleanup(() => client.disconnect());
          client.on('error', () => {});
          await client.flushall();
          const queue = openFleetJobQueue(client, 'validic-sync');
          onCleanup(() => queue.close());
          const workers: WorkerChild[] = [];
          onCleanup(async () => {
            for (const w of workers) {
              if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
              await w.child.result;
            }
          });
          const env = sandboxEnv(sandbox, {
            DATABASE_URL: db.url,
            REDIS_URL: redis.url,
            HTTP_PORT: '0',
            VALIDIC_WORKER_LOCK_MS: '1000',
            VALIDIC_WORKER_CONCURRENCY: '3',
            VALIDIC_SCHEDULES: 'false',
            VALIDIC_WORKER_STREAMS: 'false',
          });
          workers.push(await startWorkerChild(env));
          await queue.enqueue('records.backfill', { orgId: sandbox.orgId, from: day(DAYS + 20), to: day(0) });
          const share = 0.1 + random() * 0.7;
          await waitForWindowsDone(db.warehouse.db, share);
          workers[0]!.child.kill('SIGKILL');
          expect((await workers[0]!.child.result).signal).toBe('SIGKILL');

          workers.push(await startWorkerChild(env));
          await waitForRunDoneAndQueueIdle(
            'the backfill run done and the queue empty after the kill',
            db.warehouse.db,
            queue,
            { timeout: 120_000, interval: 100 },
          );
          expect((await queue.counts()).failed).toBe(0);
          const counts = await countAgainstTruth(db.warehouse, sandbox);
          recordFaultRun('sigkill-worker', counts);
          expect(counts.differences, `run ${run}, killed at ${share.toFixed(2)}`).toEqual(NO_DIFFERENCES);
        },
      );
    }
  });
});
