/**
 * The one skeleton of a one-shot sync command (`backfill`, `reconcile`, `legacy`): open the runtime,
 * and for each organization run the command's jobs in an inline runner until it drains, let the command
 * print its summary, then end the org's run alike (an interrupted run is an error that says how to resume;
 * failed jobs are listed, the first five, with what to do); close the runtime; exit 1 when any org failed.
 * A command says only what is its own: which jobs to enqueue, what to count, what to print.
 */
import type { OrganizationConfig } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
import type { InlineJob } from '../queue/inline-runner.ts';
import type { CatalogInlineRunner } from '../worker/catalog-inline-runner.ts';
import type { Runtime } from '../worker/runtime.ts';
import type { CommandContext } from './command-runner.ts';
import { EXIT_FAILED, EXIT_OK } from './command-runner.ts';

export type InlineFailures = readonly { job: InlineJob; error: Error }[];

/** How an org's run ended, for its summary line. */
export interface InlineRunEnd {
  failures: InlineFailures;
  state: 'interrupted' | 'incomplete' | 'done';
  /** Wall time of the org's run, e.g. `12.3`. */
  seconds: string;
}

export interface InlineCommand {
  orgs: readonly OrganizationConfig[];
  /** e.g. `backfill interrupted; committed windows are kept` */
  interrupted: string;
  /** What to do after an interruption. */
  resumeFix: string;
  /** What to do about failed jobs. */
  retryHint: string;
  /**
   * One org: listen to the runner and enqueue the first jobs; returns what to do once the runner has
   * drained (print the summary; may write to the warehouse).
   */
  startOrg(input: {
    org: OrganizationConfig;
    runner: CatalogInlineRunner;
    runtime: Runtime;
  }): (end: InlineRunEnd) => void | Promise<void>;
}

export async function runInlineCommand(
  { config, log, signal, print }: CommandContext,
  command: InlineCommand,
): Promise<number> {
  const { openRuntime } = await import('../worker/runtime.ts');
  const { createInlineRunner } = await import('../worker/catalog-inline-runner.ts');
  const runtime = await openRuntime(config, log);
  let failed = false;
  try {
    for (const org of command.orgs) {
      const started = Date.now();
      const runner = createInlineRunner(runtime, signal, config.sync.concurrency);
      const finishOrg = command.startOrg({ org, runner, runtime });
      const failures = await runner.drain();
      const state = signal.aborted ? 'interrupted' : failures.length ? 'incomplete' : 'done';
      await finishOrg({ failures, state, seconds: ((Date.now() - started) / 1000).toFixed(1) });
      if (signal.aborted) throw new UserFacingError(command.interrupted, { fix: command.resumeFix });
      if (failures.length > 0) {
        for (const { job, error } of failures.slice(0, 5))
          print(`  failed: ${job.name} ${job.id}: ${error.message}`);
        print(`  ${command.retryHint}`);
        failed = true;
      }
    }
  } finally {
    await runtime.close();
  }
  return failed ? EXIT_FAILED : EXIT_OK;
}
