/**
 * Lets the consumer read the next micro-batch while the previous one is being written.
 *
 * `StreamConsumer` awaits `commit` before it reads on. Without this wrapper it would stop reading for
 * every transaction. Frames would then wait unread during the commit, and their `receivedAt` would be
 * stamped only after it, so the time rule (`maxWaitMs`) would start late too. Here `commit` first
 * waits for the PREVIOUS write to land, then starts this one and returns. At most one batch is being
 * written and one is filling, so memory stays bounded.
 *
 * Safety is unchanged. Writes run one after another in order, and each one carries its own checkpoint in
 * the same transaction, so a cursor never moves past data that is not committed. If a write fails, it is
 * retried here with back-off, unless `classifyFailure` calls the failure permanent (the same write would
 * fail again). Once its attempts are used up (or at once when permanent), the failure is reported by the
 * next `commit` call (or by `drain`), which tries that batch again first. The consumer's own commit
 * retries therefore still apply, and after them the run fails as before. A crash can lose only what a
 * crash without this wrapper also loses: frames held in memory whose checkpoint never moved. Replay
 * fills that gap at the next start.
 */
import { classifyFailure } from '../errors/index.ts';
import { backoffDelay } from '../time/backoff-delay.ts';
import { abortableSleep } from '../time/clock.ts';
import type { SseLog } from './types.ts';

export interface PipelinedWriter<Args extends unknown[]> {
  /** Resolves once the previous write has landed and this one has started; rejects if a write failed for good. */
  commit(...args: Args): Promise<void>;
  /** Resolves when every started write has landed; rejects if one failed for good. */
  drain(): Promise<void>;
  /** True while a write is in flight or a failed one waits to be retried: something is not committed yet. */
  busy(): boolean;
}

export interface PipelineOptions {
  /** Attempts per write before the failure is reported to the caller. Default 3. */
  attempts?: number;
  /** Pause between attempts, ms (doubled each time, at most 30 s). Default 100. */
  retryDelayMs?: number;
  log?: SseLog;
  sleep?: (ms: number) => Promise<void>;
}

export function pipelineWrites<Args extends unknown[]>(
  write: (...args: Args) => Promise<void>,
  options: PipelineOptions = {},
): PipelinedWriter<Args> {
  const attempts = Math.max(1, options.attempts ?? 3);
  const retryDelayMs = options.retryDelayMs ?? 100;
  const sleep = options.sleep ?? ((ms: number) => abortableSleep(ms));
  // Settles when the write in flight has landed or failed for good; never rejects.
  let inFlight: Promise<void> | undefined;
  let writing = false;
  let failed: { args: Args; error: unknown } | undefined;

  const retryFailed = async (): Promise<void> => {
    const pending = failed;
    if (!pending) return;
    await write(...pending.args);
    failed = undefined;
  };

  return {
    async commit(...args: Args): Promise<void> {
      if (inFlight) await inFlight;
      inFlight = undefined;
      await retryFailed();
      writing = true;
      inFlight = (async () => {
        try {
          await writeWithRetries(args);
        } finally {
          writing = false;
        }
      })();
    },
    async drain(): Promise<void> {
      if (inFlight) await inFlight;
      inFlight = undefined;
      await retryFailed();
    },
    busy(): boolean {
      return writing || failed !== undefined;
    },
  };

  async function writeWithRetries(args: Args): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await write(...args);
        return;
      } catch (error) {
        if (attempt >= attempts || classifyFailure(error).kind === 'permanent') {
          failed = { args, error };
          return;
        }
        options.log?.warn({ err: error, attempt }, 'stream commit failed; retrying');
        await sleep(backoffDelay(attempt, { baseMs: retryDelayMs, capMs: 30_000, jitter: 0 }));
      }
    }
  }
}
