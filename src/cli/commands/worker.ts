/**
 * `validic-sync worker [--no-schedules] [--no-streams] [--concurrency N]`: the long-running BullMQ worker
 * (needs REDIS_URL). Runs queued jobs, upserts the schedules, keeps the org streams running while it
 * holds stream slots, and serves /healthz, /readyz and /metrics on HTTP_HOST:HTTP_PORT and, with push
 * configured, the push endpoint alone on PUSH_HOST:PUSH_PORT. Run as
 * many as you like against one Redis and Postgres. The first SIGTERM/SIGINT stops it gracefully (exit 0);
 * a second exits at once. With `--sandbox` (`npm run dev`) it starts a sandbox platform with a live feed
 * and runs against it (src/demo/run-dev.ts).
 */
import type { Command } from 'commander';
import { requireOrganizations } from '../../config/load-config.ts';
import type { Config } from '../../config/schema.ts';
import { UsageError } from '../../errors/index.ts';
import type { CommandRunner } from '../command-runner.ts';
import { EXIT_OK } from '../command-runner.ts';
import { parseLiveRate } from './sandbox.ts';

interface WorkerOptions {
  schedules: boolean;
  streams: boolean;
  concurrency?: string;
  sandbox?: boolean;
  liveRate?: string;
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
    .option(
      '--sandbox',
      'run against a sandbox platform started here, with a live feed and no rate limit (`npm run dev`)',
    )
    .option('--live-rate <n>', 'with --sandbox: new, changed and deleted records a second (default 2)')
    .action((options: WorkerOptions) =>
      run(async ({ config, configFrom, log, signal, print }) => {
        const concurrency = options.concurrency === undefined ? undefined : Number(options.concurrency);
        if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1)) {
          throw new UsageError(
            `--concurrency ${options.concurrency} is not a positive integer`,
            'e.g. --concurrency 4',
          );
        }
        const adjust = (base: Config): Config => ({
          ...base,
          worker: {
            ...base.worker,
            streams: base.worker.streams && options.streams,
            ...(concurrency ? { concurrency } : {}),
          },
          schedules: { ...base.schedules, enabled: base.schedules.enabled && options.schedules },
        });
        if (options.sandbox) {
          const { runDev } = await import('../../demo/run-dev.ts');
          // The demo's rule: the story is on stdout, and logs stay at warnings unless LOG_LEVEL asks.
          await runDev({
            env: process.env,
            loadConfig: configFrom,
            log: process.env.LOG_LEVEL ? log : log.child({}, { level: 'warn' }),
            print,
            signal,
            adjust,
            ...(options.liveRate === undefined ? {} : { liveRate: parseLiveRate(options.liveRate) }),
          });
          return EXIT_OK;
        }
        if (options.liveRate !== undefined)
          throw new UsageError('--live-rate goes with --sandbox', 'add --sandbox, or leave --live-rate out');
        const effective = adjust(config);
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
