/**
 * Time as an injected dependency: the one `Clock` of validic-sync. Retry back-off, the request budget
 * and the SSE consumer wait through a `Clock`, so tests step time instead of sleeping
 * (`createManualClock` in manual-clock.ts resolves `sleep` at once and advances `now`).
 */

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Longest delay `setTimeout` honours; a larger one would fire after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (!(ms > 0)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
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
