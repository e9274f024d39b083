/**
 * `validic-sync sandbox [--port P] [--seed S] [--users N] [--days D] [--live-rate N] [--env] [--write-env F]`:
 * the simulated platform. Its first stdout line is one JSON object with the URLs and credentials, so
 * scripts can start it and point the worker at it; `--env` adds the settings as `export` lines a shell
 * reads, `--write-env` writes them to a dotenv file (`.env` in the working folder is read by every
 * command; not `--env-file`, which Node takes for its own flag wherever it stands). `--live-rate` makes it produce new, changed and deleted records all the time, as a platform
 * does. It runs until stopped.
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../errors/index.ts';
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
  liveRate: string;
  env?: boolean;
  writeEnv?: string;
}

/** `--live-rate`: events a second, a number ≥ 0 (fractions allowed: 0.5 is one every 2 s). */
export function parseLiveRate(value: string): number {
  const rate = Number(value);
  if (value.trim() === '' || !Number.isFinite(rate) || rate < 0 || rate > 1000)
    throw new UsageError(
      `--live-rate ${value} is not a number of events a second`,
      'give --live-rate as a number from 0 (off) to 1000, e.g. 2',
    );
  return rate;
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
    .option('--live-rate <n>', 'new, changed and deleted records a second, from now on (0 = none)', '0')
    .option('--env', 'after the JSON line, print the settings as `export` lines a shell reads')
    .option(
      '--write-env <file>',
      'write the settings to this dotenv file (e.g. .env, which every command reads)',
    )
    .action((options: SandboxCommandOptions) =>
      run(async ({ signal, print, log }) => {
        const liveRate = parseLiveRate(options.liveRate);
        const { startSandbox } = await import('../../sandbox/index.ts');
        const { connectionDetails } = await import('../../sandbox/connection-details.ts');
        const { sandboxEnvironment, formatShellExports, formatEnvFile } = await import(
          '../../demo/sandbox-environment.ts'
        );
        const requestsPerHour = options.requestsPerHour
          ? parsePositiveInt('requests-per-hour', options.requestsPerHour)
          : null;
        const sandbox = await startSandbox({
          port: parsePositiveInt('port', options.port),
          host: options.host,
          seed: parsePositiveInt('seed', options.seed),
          users: parsePositiveInt('users', options.users),
          days: parsePositiveInt('days', options.days),
          pokeIntervalMs: parsePositiveInt('poke-ms', options.pokeMs),
          requestsPerHour,
        });
        print(
          JSON.stringify({
            ...connectionDetails(sandbox),
            applicationSecret: sandbox.applicationSecret,
            controlUrl: sandbox.controlUrl,
          }),
        );
        // A worker against a rate-limited sandbox paces itself to that limit, else it is unpaced.
        const env = sandboxEnvironment(sandbox, requestsPerHour ? { requestsPerHour } : {});
        if (options.env) for (const line of formatShellExports(env)) print(line);
        if (options.writeEnv) {
          const file = resolve(options.writeEnv);
          await writeFile(file, formatEnvFile(env), { mode: 0o600 });
          log.info({ file }, `the sandbox's settings are in ${file}: \`set -a; . ${file}; set +a\``);
        }
        if (liveRate > 0) sandbox.control.startLiveFeed({ ratePerSecond: liveRate });
        log.info({ port: sandbox.port, liveRate }, 'sandbox running; stop it with Ctrl-C');
        await new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        await sandbox.close();
      }),
    );
}
