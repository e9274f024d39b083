/**
 * Running one command: its context (options, logger, output), the warehouse it opens, the outcome
 * turned into an exit code (0, 1 failure, 2 usage or config) and an error reported as one line that
 * names the fix. Commands never call process.exit themselves; this is the only place that sets the
 * exit code.
 */

import { loadConfig } from '../config/load-config.ts';
import type { Config } from '../config/schema.ts';
import { ConfigError, HttpError, UsageError, UserFacingError } from '../errors/index.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { startTracing, type Tracing } from '../telemetry/start-tracing.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';

export type CommandBody = (ctx: CommandContext) => Promise<number | undefined>;
export type CommandRunner = (body: CommandBody) => Promise<void>;

export function createCommandRunner(globals: () => GlobalOptions): CommandRunner {
  return async (body) => {
    let ctx: CommandContext | undefined;
    let tracing: Tracing | undefined;
    try {
      tracing = await startTracing();
      ctx = createCommandContext(globals());
      const code = await body(ctx);
      process.exitCode = typeof code === 'number' ? code : EXIT_OK;
    } catch (error) {
      const verbose = ctx
        ? ['debug', 'trace'].includes(ctx.config.logLevel)
        : /^(debug|trace)$/i.test(process.env.LOG_LEVEL ?? '');
      const { message, exitCode } = describeError(error, verbose);
      process.stderr.write(`${message}\n`);
      process.exitCode = exitCode;
    } finally {
      await tracing?.shutdown().catch(() => {});
      ctx?.log.flush();
    }
  };
}

/** Exit codes of every command (the README's "Commands"): 0 done, 1 failed, 2 bad usage or config. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * What every command gets: validated config, a redacting logger, and an abort signal tied to
 * SIGINT/SIGTERM. The first signal asks the command to stop after its current batch; a second one
 * exits at once (exit code 130), as users expect from Ctrl-C twice.
 */
export interface GlobalOptions {
  config?: string;
}

export interface CommandContext {
  config: Config;
  /** The config read again from another environment, with the same config file (`worker --sandbox`). */
  configFrom(env: NodeJS.ProcessEnv): Config;
  log: Logger;
  signal: AbortSignal;
  /** Human-readable output (stdout); logs go to stderr. */
  print: (line: string) => void;
}

export function createCommandContext(
  globals: GlobalOptions,
  env: NodeJS.ProcessEnv = process.env,
): CommandContext {
  const configFrom = (from: NodeJS.ProcessEnv) =>
    loadConfig(from, globals.config ? { file: globals.config } : {});
  const config = configFrom(env);
  const log = createLogger({ level: config.logLevel });
  return {
    config,
    configFrom,
    log,
    signal: stopSignal(log),
    print: (line) => process.stdout.write(`${line}\n`),
  };
}

let controller: AbortController | undefined;

/** One controller per process: the first SIGINT/SIGTERM aborts it, the second exits immediately. */
export function stopSignal(log?: Logger): AbortSignal {
  if (controller) return controller.signal;
  const current = new AbortController();
  controller = current;
  const onSignal = (name: NodeJS.Signals) => {
    if (current.signal.aborted) {
      process.stderr.write(`\nvalidic-sync: second ${name}, exiting now\n`);
      process.exit(130);
    }
    log?.warn({ signal: name }, 'stopping after the current batch (send the signal again to exit at once)');
    current.abort(new Error(`stopped by ${name}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return current.signal;
}

/**
 * Turns any error that reaches the top of a command into one readable message and an exit code.
 * Expected errors (config, usage, user-facing) print without a stack; unexpected ones print their
 * message and a hint, with the stack only when LOG_LEVEL is debug or trace.
 */

export interface ReportedError {
  message: string;
  exitCode: number;
}

export function describeError(error: unknown, verbose = false): ReportedError {
  if (error instanceof ConfigError || error instanceof UsageError) {
    return { message: `validic-sync: ${withFix(error)}`, exitCode: EXIT_USAGE };
  }
  if (error instanceof UserFacingError) {
    return { message: `validic-sync: ${withFix(error)}`, exitCode: EXIT_FAILED };
  }
  if (error instanceof HttpError) {
    const hint =
      error.status === 401 || error.status === 403
        ? ' Fix: check VALIDIC_ORG_ID and VALIDIC_TOKEN (the token must belong to the organization).'
        : '';
    return { message: `validic-sync: ${error.message}.${hint}`, exitCode: EXIT_FAILED };
  }
  const err = error instanceof Error ? error : new Error(String(error));
  const detail = verbose && err.stack ? `\n${err.stack}` : '\n(set LOG_LEVEL=debug for the stack trace)';
  return {
    message: redactKnownSecrets(`validic-sync: unexpected error: ${err.message}${detail}`),
    exitCode: EXIT_FAILED,
  };
}

function withFix(error: UserFacingError): string {
  return error.fix ? `${error.message}\nFix: ${error.fix}` : error.message;
}

/**
 * Opens the configured warehouse (PostgreSQL, or the embedded PGlite without DATABASE_URL), brings its
 * schema up to date, runs `body`, and closes it whatever happens. For the commands that only read or
 * migrate; commands that sync build a whole runtime instead (src/worker/runtime.ts).
 */
export async function withWarehouse<T>(
  config: Config,
  log: Logger,
  body: (warehouse: Warehouse, applied: string[]) => Promise<T>,
): Promise<T> {
  // Imported on use so that `--help` and light commands start fast.
  const { openWarehouse } = await import('../warehouse/open-warehouse.ts');
  const { migrateToLatest } = await import('../warehouse/migrate.ts');
  const warehouse = await openWarehouse({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log });
  try {
    return await body(warehouse, await migrateToLatest(warehouse.db));
  } finally {
    await warehouse.close();
  }
}
