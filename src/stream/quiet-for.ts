/**
 * How long a consumer has been provably idle, as a pure function of what it saw (STATE-MACHINE.md,
 * "Idle"). Idle means live and quiet: the main stream is open, pokes keep arriving, no data frame
 * came, and nothing waits to be committed. The quiet span is measured between two things the platform
 * did: the later of "connected" and "last data frame", and the last poke after it. A connection gone
 * silent sends no pokes, so its span stops growing; any other state (connecting, backing off, stale,
 * replaying) is not idle at all.
 */
import type { StreamState } from './types.ts';

export interface QuietInput {
  state: StreamState;
  /** Frames buffered (or in flight to the warehouse) and not yet committed. */
  pendingFrames: number;
  /** Clock time (ms) the connection went live or last delivered a data frame, whichever is later. */
  quietFromMs: number | undefined;
  /** Clock time (ms) of the last poke on the main stream. */
  lastPokeAtMs: number | undefined;
}

/** Milliseconds of witnessed quiet (0 when not idle at all). */
export function quietForMs(input: QuietInput): number {
  if (input.state !== 'live' || input.pendingFrames > 0) return 0;
  if (input.quietFromMs === undefined || input.lastPokeAtMs === undefined) return 0;
  return Math.max(0, input.lastPokeAtMs - input.quietFromMs);
}
