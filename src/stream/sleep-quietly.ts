/** The driver's waits on the injected clock: a sleep that never throws, and a read raced with a timer. */
import { type Clock, MAX_TIMER_MS } from '../time/clock.ts';

export const TIMER: unique symbol = Symbol('timer');

export async function sleepQuietly(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    // Clamped for any Clock, not only the system one: a wake-up time with no timer due is Infinity.
    await clock.sleep(Math.min(Math.max(0, ms), MAX_TIMER_MS), signal);
  } catch {
    // An aborted sleep ends early; callers look at their signal.
  }
}

/** Resolves after pending I/O callbacks of this event-loop turn have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Waits for `pending`, at most `ms`, or until `signal` aborts; TIMER when it did not settle in time. */
export async function raceWithTimer<T>(
  clock: Clock,
  pending: Promise<T>,
  ms: number,
  signal: AbortSignal,
): Promise<T | typeof TIMER> {
  const timer = new AbortController();
  const onAbort = () => timer.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await Promise.race<T | typeof TIMER>([
      pending,
      sleepQuietly(clock, ms, timer.signal).then(() => TIMER),
    ]);
  } finally {
    signal.removeEventListener('abort', onAbort);
    timer.abort();
  }
}
