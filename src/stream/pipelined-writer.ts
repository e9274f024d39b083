/**
 * Lets the consumer read the next micro-batch while the previous one is being written.
 *
 * `StreamConsumer` awaits `commit` before it reads on. Without this wrapper it would stop reading for
 * every transaction. Frames would then wait unread during the commit, and their `receivedAt` would be
 * stamped only after it, so the time rule (`maxWaitMs`) would start late too. Here `commit` first
 * waits for the PREVIOUS write to land, then starts this one and returns. At most one batch is being
 * written and one is filling, so memory stays bounded.
 *
 * Safety is unchanged. Writes run one after another in order, and each one carries its own cursor in
 * the same transaction, so a cursor never moves past data that is not committed. A write that fails is
 * not kept or retried here: the next `commit` (or `drain`) rejects with `EarlierWriteFailed`, which
 * carries the failed write's frames, and starts nothing. The consumer's machine is then the one owner of
 * everything that did not land: it holds those frames with the batch it was committing, stops reading,
 * and retries them with back-off until they land (STATE-MACHINE.md, "Commits"). A crash can lose only
 * frames held in memory whose cursor never moved; the reconciliation re-delivers them.
 */
import type { DataFrame } from './types.ts';

/** A write handed over earlier failed: its frames, and why. */
export class EarlierWriteFailed extends Error {
  readonly frames: DataFrame[];
  override readonly cause: unknown;

  constructor(frames: DataFrame[], cause: unknown) {
    super(`an earlier stream write failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'EarlierWriteFailed';
    this.frames = frames;
    this.cause = cause;
  }
}

export interface PipelinedWriter<Args extends unknown[]> {
  /**
   * Resolves once the previous write has landed and this one has started; rejects with
   * `EarlierWriteFailed` (and starts nothing) if the previous write failed.
   */
  commit(...args: Args): Promise<void>;
  /** Resolves when every started write has landed; rejects with `EarlierWriteFailed` if one failed. */
  drain(): Promise<void>;
  /** True while a write is in flight: something is not committed yet. */
  busy(): boolean;
}

/**
 * `framesOf` tells which frames a write's arguments carry (what the consumer must hold if it fails).
 */
export function pipelineWrites<Args extends unknown[]>(
  write: (...args: Args) => Promise<void>,
  framesOf: (...args: Args) => DataFrame[],
): PipelinedWriter<Args> {
  // Settles when the write in flight has landed or failed; never rejects.
  let inFlight: Promise<void> | undefined;
  let writing = false;
  let failed: EarlierWriteFailed | undefined;

  const settle = async (): Promise<void> => {
    if (inFlight) await inFlight;
    inFlight = undefined;
    const failure = failed;
    failed = undefined;
    if (failure) throw failure;
  };

  return {
    async commit(...args: Args): Promise<void> {
      await settle();
      writing = true;
      inFlight = (async () => {
        try {
          await write(...args);
        } catch (error) {
          failed = new EarlierWriteFailed(framesOf(...args), error);
        } finally {
          writing = false;
        }
      })();
    },
    drain: settle,
    busy: () => writing || failed !== undefined,
  };
}
