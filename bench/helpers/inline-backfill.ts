/**
 * The real backfill, in this process: the same runtime, inline runner and `records.backfill` job the
 * `backfill` command runs (src/cli/commands/backfill.ts), without the CLI's progress bar and printing.
 */

import { type Config, configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { emptyCounts, type LoadCounts } from '../../src/pipeline/batch.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime } from '../../src/worker/runtime.ts';
import type { SandboxInfo } from './sandbox-thread.ts';

export interface BackfillTarget {
  databaseUrl: string;
  sandbox: Pick<SandboxInfo, 'apiUrl' | 'streamsUrl' | 'legacyUrl' | 'orgId' | 'token'>;
  /** The client's budget; default far above anything a bench uses, so it never paces. */
  requestsPerHour?: number;
  concurrency?: number;
}

/** A config of one org pointed at the sandbox (the same settings the CLI would read from the env). */
export function benchConfig(target: BackfillTarget): Config {
  return configSchema.parse({
    databaseUrl: target.databaseUrl,
    allowInsecureLoopback: true,
    logLevel: 'warn',
    ...(target.concurrency ? { sync: { concurrency: target.concurrency } } : {}),
    organizations: [
      {
        orgId: target.sandbox.orgId,
        token: target.sandbox.token,
        apiUrl: target.sandbox.apiUrl,
        streamsUrl: target.sandbox.streamsUrl,
        legacyUrl: target.sandbox.legacyUrl,
        requestsPerHour: target.requestsPerHour ?? 100_000_000,
      },
    ],
  });
}

export interface BackfillOutcome {
  seconds: number;
  counts: LoadCounts;
  /** Records the poll windows brought (all record versions served). */
  records: number;
  requests: number;
  byStatus: Record<string, number>;
  failures: number;
}

export async function runInlineBackfill(
  target: BackfillTarget,
  range: { from: string; to: string },
  signal: AbortSignal = new AbortController().signal,
): Promise<BackfillOutcome> {
  const config = benchConfig(target);
  const runtime = await openRuntime(config, silentLogger);
  try {
    const started = process.hrtime.bigint();
    const runner = createInlineRunner(runtime, signal, config.sync.concurrency);
    const counts = emptyCounts();
    let records = 0;
    runner.on('completed', (job, result) => {
      if (job.name !== 'records.poll') return;
      const r = result as LoadCounts & { records: number };
      records += r.records;
      for (const key of Object.keys(counts) as (keyof LoadCounts)[]) counts[key] += r[key] ?? 0;
    });
    runner.enqueue('records.backfill', {
      orgId: target.sandbox.orgId,
      from: range.from,
      to: range.to,
      restart: true,
      connections: true,
    });
    const failures = await runner.drain();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return {
      seconds,
      counts,
      records,
      requests: runtime.requestStats.requests,
      byStatus: { ...runtime.requestStats.byStatus },
      failures: failures.length,
    };
  } finally {
    await runtime.close();
  }
}
