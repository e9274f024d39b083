/**
 * Starts `validic-sync worker` processes (the real CLI) and waits until each serves HTTP; the port is
 * read from its "worker listening on" line (HTTP_PORT=0 picks a free one), the push endpoint's URL from
 * the "push endpoint on" line printed before it (when push is configured; PUSH_PORT=0 for a free port).
 */
import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { jobCatalog } from '../../jobs/index.ts';
import type { JobDefinition } from '../../src/queue/job-definition.ts';
import { type JobQueue, openJobQueue } from '../../src/queue/job-queue.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { type CliResult, resultWithin, sandboxEnv, spawnCli } from './cli.ts';
import { TEST_REDIS_URL, type TestRedis } from './redis.ts';

export interface WorkerChild {
  child: ChildProcess & { result: Promise<CliResult> };
  url: string;
  /** The push endpoint (listener and path), when push is configured. */
  pushUrl: string | undefined;
  stderr(): string;
  /**
   * SIGTERM, then the exit: a graceful stop that has not ended after `timeoutMs` kills the worker and
   * fails with the step and the tail of its log (what the stop was still waiting for), instead of
   * running into the test's own timeout.
   */
  stop(timeoutMs?: number): Promise<CliResult>;
}

/**
 * The environment of one `worker` child on the sandbox: its database, its own Redis prefix, both
 * listeners on free ports, and no schedules or streams unless `extra` turns them on.
 */
export function workerChildEnv(
  sandbox: Sandbox,
  databaseUrl: string,
  redis: TestRedis,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return sandboxEnv(sandbox, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: TEST_REDIS_URL,
    VALIDIC_REDIS_PREFIX: redis.prefix.slice(0, -1),
    HTTP_PORT: '0',
    PUSH_PORT: '0',
    VALIDIC_SCHEDULES: 'false',
    VALIDIC_WORKER_STREAMS: 'false',
    ...extra,
  });
}

export async function startWorkerChild(env: NodeJS.ProcessEnv, args: string[] = []): Promise<WorkerChild> {
  const child = spawnCli(['worker', ...args], env);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  let stdout = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const match = /worker listening on (\S+)/.exec(stdout);
      if (match) {
        child.stdout!.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.result.then((r) =>
      reject(new Error(`worker exited (${r.code ?? r.signal}) before serving: ${r.stderr}`)),
    );
  });
  const pushUrl = /push endpoint on (\S+)/.exec(stdout)?.[1];
  const stop = (timeoutMs = 60_000): Promise<CliResult> => {
    child.kill('SIGTERM');
    return resultWithin(child, timeoutMs, 'the worker to stop after SIGTERM');
  };
  return { child, url, pushUrl, stderr: () => stderr, stop };
}

/** The job queue a fleet test feeds and reads: the catalog's jobs under `prefix`, 100 finished jobs kept. */
export function openFleetJobQueue(redis: Redis, prefix: string): JobQueue {
  return openJobQueue({
    redis,
    prefix,
    catalog: jobCatalog as Record<string, JobDefinition>,
    keep: { keepCompleted: 100, keepFailed: 100 },
  });
}
