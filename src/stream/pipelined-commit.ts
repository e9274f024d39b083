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
 * the same transaction, so a cursor never moves past data that is not committed. A write that fails is
 * kept, not retried here: the next `commit` call (or `drain`) tries it again first and rejects if it
 * fails again. The consumer owns that retry: on the rejection it stops reading and holds its frames
 * until a commit lands (STATE-MACHINE.md, "Commits"). A crash can lose only frames held in memory whose
 * checkpoint never moved; the next reconciliation pass re-delivers them.
 */

export interface PipelinedWriter<Args extends unknown[]> {
  /** Resolves once the previous write has landed and this one has started; rejects if a write failed. */
  commit(...args: Args): Promise<void>;
  /** Resolves when every started write has landed; rejects if one failed. */
  drain(): Promise<void>;
  /** True while a write is in flight or a failed one waits to be retried: something is not committed yet. */
  busy(): boolean;
}

export function pipelineWrites<Args extends unknown[]>(
  write: (...args: Args) => Promise<void>,
): PipelinedWriter<Args> {
  // Settles when the write in flight has landed or failed; never rejects.
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
          await write(...args);
        } catch (error) {
          failed = { args, error };
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
}
