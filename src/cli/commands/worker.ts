/**
 * `validic-sync worker [--no-schedules] [--no-streams] [--concurrency N]`: the long-running BullMQ worker
 * (needs REDIS_URL). Runs queued jobs, upserts the schedules, keeps the org streams running while it
 * holds stream slots, and serves /healthz, /readyz and /metrics on HTTP_HOST:HTTP_PORT and, with push
 * configured, the push endpoint alone on PUSH_HOST:PUSH_PORT. Run as
 * many as you like against one Redis and Postgres. The first SIGTERM/SIGINT stops it gracefully (exit 0);
 * a second exits at once.
 */
import type { Command } from 'commander';
import { requireOrganizations } from '../../config/load-config.ts';
import { UsageError } from '../../errors/index.ts';
import type { CommandRunner } from '../command-runner.ts';
import { EXIT_OK } from '../command-runner.ts';

interface WorkerOptions {
  schedules: boolean;
  streams: boolean;
  concurrency?: string;
}

export function registerWorker(program: Command, run: CommandRunner): void {
  program
    .command('worker')
    .description(
      'long-running BullMQ worker: queued jobs, schedules, streams, health and metrics (needs REDIS_URL)',
    )
    .option('--no-schedules', 'do not upsert the schedules (run queued work and streams only)')
    .option('--no-streams', 'do not consume the org streams in this process')
    .option('--concurrency <n>', 'jobs this process runs at once (default: worker.concurrency)')
    .action((options: WorkerOptions) =>
      run(async ({ config, log, signal, print }) => {
        const concurrency = options.concurrency === undefined ? undefined : Number(options.concurrency);
        if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1)) {
          throw new UsageError(
            `--concurrency ${options.concurrency} is not a positive integer`,
            'e.g. --concurrency 4',
          );
        }
        const effective = {
          ...config,
          worker: {
            ...config.worker,
            streams: config.worker.streams && options.streams,
            ...(concurrency ? { concurrency } : {}),
          },
          schedules: { ...config.schedules, enabled: config.schedules.enabled && options.schedules },
        };
        requireOrganizations(config);
        const { startWorker } = await import('../../worker/start-worker.ts');
        const { describeWarehouse } = await import('../../warehouse/open-warehouse.ts');
        const worker = await startWorker(effective, log, signal);
        print(`worker writes to ${describeWarehouse(config)}`);
        // The push line first: a caller that waits for "worker listening" has both then.
        if (worker.pushServer) print(`push endpoint on ${worker.pushServer.url}${effective.http.pushPath}`);
        print(`worker listening on ${worker.server.url}`);
        await worker.stopped;
        print('worker stopped');
        return EXIT_OK;
      }),
    );
}
