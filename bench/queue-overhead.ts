/**
 * Queue overhead: the same backfill (sandbox in its own thread, zero latency, the real `records.backfill`
 * job fanning out `records.poll` / `connections.reconcile`) run inline, as the `backfill` command runs it,
 * and through BullMQ on real Redis, as a `worker` runs it (one worker, the same concurrency). Each run
 * gets a fresh database; each way runs three times (best of three, alternating) so warm-up does not decide.
 * Figure: inline time / BullMQ time (1 = no overhead). Target 0.9.
 * Run: `node bench/queue-overhead.ts [--quick]`.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { jobCatalog } from '../jobs/index.ts';
import { silentLogger } from '../src/log/logger.ts';
import type { JobDefinition } from '../src/queue/job-definition.ts';
import { openJobQueue } from '../src/queue/job-queue.ts';
import { startQueueWorker } from '../src/queue/queue-worker.ts';
import { openRuntime } from '../src/worker/runtime.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { benchConfig, runInlineBackfill } from './helpers/inline-backfill.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';
import { type SandboxInfo, startSandboxThread } from './helpers/sandbox-thread.ts';

const TARGET = 0.9;
const CONCURRENCY = 4;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const range = { from: '2026-01-14', to: '2026-03-15' };

async function runQueuedBackfill(databaseUrl: string, sandbox: SandboxInfo): Promise<number> {
  const prefix = `vs-bench:queue-overhead:${randomUUID()}`;
  const config = { ...benchConfig({ databaseUrl, sandbox, concurrency: CONCURRENCY }), redisUrl: REDIS_URL };
  const runtime = await openRuntime(config, silentLogger);
  const redis = runtime.redis!;
  const catalog = jobCatalog as Record<string, JobDefinition>;
  const jobQueue = openJobQueue({ redis, prefix, catalog, keep: { keepCompleted: 1000, keepFailed: 1000 } });
  const stop = new AbortController();
  const worker = startQueueWorker({
    runtime,
    redis,
    prefix,
    catalog,
    jobQueue,
    concurrency: CONCURRENCY,
    lockDurationMs: 30_000,
    maxStalledCount: 1,
    signal: stop.signal,
    log: silentLogger,
  });
  try {
    await worker.worker.waitUntilReady();
    const started = process.hrtime.bigint();
    await jobQueue.enqueue('records.backfill', { orgId: sandbox.orgId, ...range, restart: true });
    // Done when the run is finished and nothing is left in the queue; checked on each completion.
    await new Promise<void>((resolve, reject) => {
      let checking = false;
      const check = async () => {
        if (checking) return;
        checking = true;
        try {
          const c = await jobQueue.counts();
          if (c.failed > 0) return reject(new Error('a queued job failed'));
          const run = await sql<{ status: string }>`select status from validic_sync.runs`.execute(
            runtime.warehouse.db,
          );
          if (c.active + c.waiting + c.prioritized + c.delayed === 0 && run.rows[0]?.status === 'done')
            resolve();
        } finally {
          checking = false;
        }
      };
      worker.worker.on('completed', () => void check().catch(reject));
      worker.worker.on('drained', () => void check().catch(reject));
    });
    return secondsSince(started);
  } finally {
    stop.abort();
    await worker.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await jobQueue.close();
    await runtime.close();
  }
}

const sandbox = await startSandboxThread({
  seed: 9,
  users: quick ? 10 : 40,
  days: 60,
  now: new Date('2026-03-15T12:00:00Z'),
});
try {
  const inline: number[] = [];
  const queued: number[] = [];
  for (let round_ = 0; round_ < (quick ? 1 : 3); round_++) {
    for (const way of ['inline', 'bullmq'] as const) {
      const db = await createTestDatabase();
      try {
        if (way === 'inline') {
          const outcome = await runInlineBackfill(
            { databaseUrl: db.url, sandbox: sandbox.info, concurrency: CONCURRENCY },
            range,
          );
          if (outcome.failures > 0) throw new Error(`inline backfill had ${outcome.failures} failed jobs`);
          inline.push(outcome.seconds);
        } else {
          queued.push(await runQueuedBackfill(db.url, sandbox.info));
        }
      } finally {
        await db.drop();
      }
    }
  }
  const inlineBest = Math.min(...inline);
  const queuedBest = Math.min(...queued);
  const ratio = inlineBest / queuedBest;
  printFigure({
    name: 'queue-overhead',
    value: round(ratio),
    target: String(TARGET),
    ok: ratio >= TARGET,
    raw: {
      users: sandbox.info.uids.length,
      records: sandbox.info.records,
      range: `${range.from}..${range.to}`,
      concurrency: CONCURRENCY,
      inline_seconds: inline.map((s) => round(s, 3)),
      bullmq_seconds: queued.map((s) => round(s, 3)),
    },
  });
} finally {
  await sandbox.close();
}
