/**
 * Time as an injected dependency: retry back-off and the request budget wait through a `Clock`, so tests
 * step time instead of sleeping (a test clock resolves `sleep` at once and advances `now`).
 */

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new DOMException('The operation was aborted', 'AbortError');
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: abortableSleep,
};

/**
 * A clock for tests: `sleep` advances virtual time and resolves on the next microtask, and every wait is
 * recorded, so a test asserts on the waits the code asked for rather than on wall time.
 */
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
