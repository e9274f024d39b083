/**
 * The fleet-wide connection slots of a stream (at most 3, the platform's limit): a connection holds one
 * while it runs, and the slot number names its cursor, so two processes never write the same one.
 * The worker implements `AcquireSlot` with Redis locks (src/worker/stream-slots.ts).
 */
import type { Logger } from '../log/logger.ts';

/**
 * A held connection slot. The worker implements it with Redis locks (one key per slot of a stream,
 * renewed while held); without the hook, connection `i` simply uses slot `i`.
 */
export interface ConnectionSlot {
  /** Fleet-wide slot number, 0..2: it names the connection's cursor, so it must be unique per stream. */
  slot: number;
  /** Aborted when the lock is lost: the connection then stops (flushing) and asks for a slot again. */
  lost?: AbortSignal;
  release(): Promise<void>;
}

/**
 * Waits until a slot of this stream is free and takes it (resolve), or until `signal` aborts (reject or
 * resolve; the caller checks the signal). `index` is this process's connection number (0-based).
 */
export type AcquireSlot = (index: number, signal: AbortSignal) => Promise<ConnectionSlot>;

/**
 * Connection `index` under `acquireSlot`: take a slot, run on it until `signal` aborts or the slot's
 * lock is lost, release it, and take one again after a loss.
 */
export async function runOnSlots(
  index: number,
  acquireSlot: AcquireSlot,
  signal: AbortSignal,
  runSlot: (slot: number, stop: AbortSignal) => Promise<void>,
  log: Pick<Logger, 'warn'>,
): Promise<void> {
  while (!signal.aborted) {
    let lease: ConnectionSlot;
    try {
      lease = await acquireSlot(index, signal);
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    try {
      if (signal.aborted) return;
      await runSlot(lease.slot, lease.lost ? AbortSignal.any([signal, lease.lost]) : signal);
    } finally {
      await lease
        .release()
        .catch((error: unknown) => log.warn({ err: error }, 'releasing a stream slot failed'));
    }
    if (lease.lost?.aborted && !signal.aborted)
      log.warn({ slot: lease.slot }, 'stream slot lost; taking one again');
  }
}
