/**
 * What every command gets: validated config, a redacting logger, and an abort signal tied to
 * SIGINT/SIGTERM. The first signal asks the command to stop after its current batch; a second one
 * exits at once (exit code 130), as users expect from Ctrl-C twice.
 */
import { loadConfig } from '../config/load-config.ts';
import type { Config } from '../config/schema.ts';
import { createLogger, type Logger } from '../log/logger.ts';

export interface GlobalOptions {
  config?: string;
}

export interface CommandContext {
  config: Config;
  log: Logger;
  signal: AbortSignal;
  /** Human-readable output (stdout); logs go to stderr. */
  print: (line: string) => void;
}

export function createCommandContext(
  globals: GlobalOptions,
  env: NodeJS.ProcessEnv = process.env,
): CommandContext {
  const config = loadConfig(env, globals.config ? { file: globals.config } : {});
  const log = createLogger({ level: config.logLevel });
  return { config, log, signal: stopSignal(log), print: (line) => process.stdout.write(`${line}\n`) };
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
