/**
 * The common end of a one-shot sync command's run for one org: an interrupted run is an error that
 * says how to resume; failed jobs are listed (the first five) with what to do; returns whether the run
 * failed. Called after the command printed its own summary.
 */
import { UserFacingError } from '../errors.ts';
import type { InlineJob } from '../queue/inline-runner.ts';

export interface RunEnd {
  print: (line: string) => void;
  signal: AbortSignal;
  failures: readonly { job: InlineJob; error: Error }[];
  /** e.g. `backfill interrupted; committed windows are kept` */
  interrupted: string;
  /** What to do after an interruption. */
  resumeFix: string;
  /** What to do about failed jobs. */
  retryHint: string;
}

export function finishInlineRun(end: RunEnd): boolean {
  if (end.signal.aborted) throw new UserFacingError(end.interrupted, { fix: end.resumeFix });
  if (end.failures.length === 0) return false;
  for (const { job, error } of end.failures.slice(0, 5))
    end.print(`  failed: ${job.name} ${job.id}: ${error.message}`);
  end.print(`  ${end.retryHint}`);
  return true;
}
