/**
 * `validic-sync sandbox [--port P] [--seed S] [--users N] [--days D]`: the simulated platform. Its
 * first stdout line is one JSON object with the URLs and credentials, so scripts can start it and point
 * the worker at it; it runs until stopped.
 */
import type { Command } from 'commander';
import type { CommandRunner } from '../command-runner.ts';
import { parsePositiveInt } from '../parse-options.ts';

interface SandboxCommandOptions {
  port: string;
  host: string;
  seed: string;
  users: string;
  days: string;
  pokeMs: string;
  requestsPerHour?: string;
}

export function registerSandbox(program: Command, run: CommandRunner): void {
  program
    .command('sandbox')
    .description('run the simulated platform (v2 API, streams, replay, legacy v1) for development and demos')
    .option('--port <port>', 'port to listen on (0 = any free port)', '0')
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated data and faults', '1')
    .option('--users <n>', 'generated users', '10')
    .option('--days <n>', 'generated days of data, ending today', '30')
    .option('--poke-ms <ms>', 'poke interval of idle streams', '5000')
    .option('--requests-per-hour <n>', 'rate limit per token (default: none)')
    .action((options: SandboxCommandOptions) =>
      run(async ({ signal, print, log }) => {
        const { startSandbox } = await import('../../sandbox/index.ts');
        const { connectionDetails } = await import('../../sandbox/connection-details.ts');
        const sandbox = await startSandbox({
          port: parsePositiveInt('port', options.port),
          host: options.host,
          seed: parsePositiveInt('seed', options.seed),
          users: parsePositiveInt('users', options.users),
          days: parsePositiveInt('days', options.days),
          pokeIntervalMs: parsePositiveInt('poke-ms', options.pokeMs),
          requestsPerHour: options.requestsPerHour
            ? parsePositiveInt('requests-per-hour', options.requestsPerHour)
            : null,
        });
        print(
          JSON.stringify({
            ...connectionDetails(sandbox),
            applicationSecret: sandbox.applicationSecret,
            controlUrl: sandbox.controlUrl,
          }),
        );
        log.info({ port: sandbox.port }, 'sandbox running; stop it with Ctrl-C');
        await new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        await sandbox.close();
      }),
    );
}
