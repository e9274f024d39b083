/**
 * A clock for tests: `sleep` advances virtual time and resolves on the next microtask, and every wait is
 * recorded, so a test asserts on the waits the code asked for rather than on wall time.
 */
import { abortReason, type Clock } from './clock.ts';

export interface ManualClock extends Clock {
  readonly sleeps: number[];
  advance(ms: number): void;
}

export function createManualClock(start = Date.UTC(2026, 0, 1)): ManualClock {
  let current = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => current,
    advance(ms: number) {
      current += ms;
    },
    async sleep(ms: number, signal?: AbortSignal) {
      if (signal?.aborted) throw abortReason(signal);
      sleeps.push(ms);
      current += Math.max(0, ms);
    },
  };
}
