/**
 * The one skeleton of a one-shot sync command (`backfill`, `reconcile`, `legacy`, `audit`): open the
 * runtime, and for each organization run the command's jobs in an inline runner until it drains, let the
 * command print its summary, then end the org's run alike (an interrupted run is an error that says how to
 * resume; failed jobs are listed, the first five, with what to do); close the runtime; exit 1 when any org
 * failed. A failure that every job would meet (a refused token, a wrong base URL: fatal-failure.ts) ends
 * the run at once with the setting to fix, and so does a platform that answered nothing for
 * `UNANSWERED_LIMIT_MS`. A command says only what is its own: which jobs to enqueue, what to count, what
 * to print.
 */
import type { OrganizationConfig } from '../config/schema.ts';
import { UserFacingError } from '../errors/index.ts';
import type { EnqueuePayload } from '../queue/enqueue-job.ts';
import type { InlineJob } from '../queue/inline-runner.ts';
import type { CatalogPayloads, JobName, ResultOf } from '../queue/job-catalog.ts';
import type { CatalogInlineRunner } from '../worker/catalog-inline-runner.ts';
import type { Runtime } from '../worker/runtime.ts';
import type { CommandContext } from './command-runner.ts';
import { EXIT_FAILED, EXIT_OK } from './command-runner.ts';
import { fatalFailure, isUnanswered, UNANSWERED_LIMIT_MS, unansweredFailure } from './fatal-failure.ts';

export type InlineFailures = readonly { job: InlineJob; error: Error }[];

/** How an org's run ended, for its summary line. */
export interface InlineRunEnd {
  failures: InlineFailures;
  /** `stopped`: a failure every job would meet ended the run; the command's error follows the summary. */
  state: 'interrupted' | 'stopped' | 'incomplete' | 'done';
  /** Wall time of the org's run, e.g. `12.3`. */
  seconds: string;
}

/** Runs one job (and what it fans out) to its end in a runner of its own, before the org's run. */
export type RunAlone = <Name extends JobName>(
  name: Name,
  payload: EnqueuePayload<CatalogPayloads[Name]>,
) => Promise<{ result: ResultOf<Name> | undefined; failures: InlineFailures }>;

export interface InlineCommand {
  orgs: readonly OrganizationConfig[];
  /** e.g. `backfill interrupted; committed windows are kept` */
  interrupted: string;
  /** What to do after an interruption. */
  resumeFix: string;
  /** What to do about failed jobs. */
  retryHint: string;
  /**
   * One org: listen to the runner and enqueue the first jobs (after work of its own, e.g. an estimate,
   * which may run jobs through `runAlone`); returns what to do once the runner has drained (print the
   * summary; may write to the warehouse).
   */
  startOrg(input: {
    org: OrganizationConfig;
    runner: CatalogInlineRunner;
    runtime: Runtime;
    runAlone: RunAlone;
  }): OrgFinish | Promise<OrgFinish>;
}

type OrgFinish = (end: InlineRunEnd) => void | Promise<void>;

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
      const stop = new AbortController();
      const runSignal = AbortSignal.any([signal, stop.signal]);
      const fatal = fatalFailureWatch(org, stop);
      const newRunner = () => fatal.watch(createInlineRunner(runtime, runSignal, config.sync.concurrency));
      const interrupted = () => new UserFacingError(command.interrupted, { fix: command.resumeFix });
      const runAlone: RunAlone = async (name, payload) => {
        const alone = newRunner();
        let result: ResultOf<typeof name> | undefined;
        alone.on('completed', (job, value) => {
          if (job.name === name) result ??= value as ResultOf<typeof name>;
        });
        alone.enqueue(name, payload);
        const failures = await alone.drain();
        const stopped = fatal.error();
        if (stopped) throw stopped;
        if (signal.aborted) throw interrupted();
        return { result, failures };
      };
      const runner = newRunner();
      const finishOrg = await command.startOrg({ org, runner, runtime, runAlone });
      const failures = await runner.drain();
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const stopped = fatal.error();
      if (stopped) {
        // A summary only when something was done: a token refused at the first request has none.
        if (fatal.completed() > 0) await finishOrg({ failures, state: 'stopped', seconds });
        throw stopped;
      }
      const state = signal.aborted ? 'interrupted' : failures.length ? 'incomplete' : 'done';
      await finishOrg({ failures, state, seconds });
      if (signal.aborted) throw interrupted();
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

/**
 * Listens to an org's runners for a failure that ends the run (fatal-failure.ts): a refusal every job
 * would meet, or waits on a platform that answered nothing for `UNANSWERED_LIMIT_MS` since the last job
 * that completed. Stops the run through `stop`; the runners then fail what is running, and the command
 * throws `error()`.
 */
function fatalFailureWatch(
  org: OrganizationConfig,
  stop: AbortController,
): {
  watch(runner: CatalogInlineRunner): CatalogInlineRunner;
  error(): Error | undefined;
  completed(): number;
} {
  let fatal: Error | undefined;
  let completed = 0;
  let unansweredSince: number | undefined;
  const end = (error: Error) => {
    if (fatal) return;
    fatal = error;
    stop.abort(error);
  };
  const check = (error: Error) => {
    const refused = fatalFailure(error, org);
    if (refused) return end(refused);
    if (!isUnanswered(error)) return;
    unansweredSince ??= Date.now();
    const waited = Date.now() - unansweredSince;
    if (waited >= UNANSWERED_LIMIT_MS) end(unansweredFailure(error, org, Math.round(waited / 1000)));
  };
  return {
    watch(runner) {
      runner.on('completed', () => {
        completed++;
        unansweredSince = undefined;
      });
      // Before the runner's own listeners, so a run that ends here logs no wait it will not make.
      runner.prependListener('failed', (_job, error) => check(error));
      runner.prependListener('waiting', (_job, error) => check(error));
      runner.prependListener('retrying', (_job, error) => check(error));
      return runner;
    },
    error: () => fatal,
    completed: () => completed,
  };
}
