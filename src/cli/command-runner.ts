/**
 * Runs one command's body with its context and turns the outcome into an exit code. Commands never
 * call process.exit themselves; this is the only place that sets the exit code.
 */

import { startTracing, type Tracing } from '../telemetry/start-tracing.ts';
import { type CommandContext, createCommandContext, type GlobalOptions } from './command-context.ts';
import { EXIT_OK } from './exit-codes.ts';
import { describeError } from './report-error.ts';

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
