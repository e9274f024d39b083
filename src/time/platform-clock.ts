/**
 * The platform's clock as this process knows it: the offset between the worker's clock and the
 * platform's, bounded by what the platform said of its own time (the `Date` header of every answer, the
 * `ts` of the streams' pokes), and the platform's "now" that cursors, window ends and "caught up"
 * judgments use instead of the worker's.
 */

/**
 * Each observation bounds the offset (platform − worker, ms) to an interval:
 *
 * - a `Date` header says the platform's second D (1 s precision) at some moment between the request's
 *   send (`sentAt`) and the answer's arrival (`receivedAt`), so the offset lies in
 *   [D − receivedAt, D + 1000 − sentAt];
 * - a poke's `ts` (ms precision) was written before it arrived, so the offset is at least
 *   ts − receivedAt; a poke is sent on an idle connection, so it is taken to arrive within
 *   `POKE_DELIVERY_MS`.
 *
 * Intervals are intersected, so the estimate tightens to the best observations. An observation that
 * does not meet the interval means one of the clocks moved (a worker clock stepped by NTP, a VM resumed):
 * the interval starts again from that observation. An interval not confirmed for `STALE_AFTER_MS` is
 * widened again by the next observation (clocks drift), so an old tight bound never hides a new offset.
 */
export interface PlatformClockReading {
  /** Best estimate of platform − worker, ms (the middle of the interval); 0 before any observation. */
  offsetMs: number;
  /** Half the width of the interval the offset is known to lie in, ms (Infinity before any observation). */
  uncertaintyMs: number;
  /** The worker's time of the last observation, ms; undefined before any. */
  observedAt: number | undefined;
}

export interface PlatformClock {
  /** The platform's now, ms (the worker's clock plus the estimated offset). */
  now(): number;
  /**
   * The platform's now at the earliest it can be, ms: use it where running ahead of the platform would
   * skip data (a cursor's end, a window's end).
   */
  earliestNow(): number;
  /**
   * The platform's now at the latest it can be, ms: use it where falling behind the platform would leave
   * out what it already holds (the end of a window asked now).
   */
  latestNow(): number;
  /** The platform's time at the earliest it can have been when the worker's clock read `workerMs`. */
  earliestAt(workerMs: number): number;
  /** What is known of the offset. */
  reading(): PlatformClockReading;
  /** An answer's `Date` header, with the worker's times of the request's send and the answer's arrival. */
  observeDateHeader(value: string | string[] | undefined, sentAt: number, receivedAt: number): void;
  /** An instant the platform wrote with ms precision (a poke's `ts`), and the worker's time it arrived. */
  observeInstant(platformMs: number, receivedAt: number): void;
}

/** A poke is written on an idle connection and read at once: it is taken to arrive within this, ms. */
export const POKE_DELIVERY_MS = 1_000;
/** An interval this old (ms since its last confirmation) no longer narrows a new observation. */
export const STALE_AFTER_MS = 10 * 60_000;
/** The offset is reported (status, metrics, alert) once its estimate exceeds this, ms. */
export const REPORTED_OFFSET_MS = 60_000;

export function createPlatformClock(workerNow: () => number = Date.now): PlatformClock {
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  let observedAt: number | undefined;

  const observe = (lo: number, hi: number, at: number) => {
    if (!(lo <= hi) || !Number.isFinite(lo) || !Number.isFinite(hi)) return;
    const stale = observedAt === undefined || at - observedAt > STALE_AFTER_MS;
    const meets = lo <= high && hi >= low;
    if (stale || !meets) {
      low = lo;
      high = hi;
    } else {
      low = Math.max(low, lo);
      high = Math.min(high, hi);
    }
    observedAt = at;
  };
  const offset = () => (observedAt === undefined ? 0 : (low + high) / 2);

  return {
    now: () => Math.round(workerNow() + offset()),
    earliestNow: () => Math.floor(workerNow() + (observedAt === undefined ? 0 : low)),
    latestNow: () => Math.ceil(workerNow() + (observedAt === undefined ? 0 : high)),
    earliestAt: (workerMs) => Math.floor(workerMs + (observedAt === undefined ? 0 : low)),
    reading: () => ({
      offsetMs: Math.round(offset()),
      uncertaintyMs: observedAt === undefined ? Number.POSITIVE_INFINITY : Math.ceil((high - low) / 2),
      observedAt,
    }),
    observeDateHeader(value, sentAt, receivedAt) {
      const text = Array.isArray(value) ? value[0] : value;
      if (text === undefined) return;
      const date = Date.parse(text);
      if (Number.isNaN(date)) return;
      // Dates carry whole seconds; one with milliseconds is read as its second all the same.
      const second = Math.floor(date / 1000) * 1000;
      observe(second - receivedAt, second + 1000 - sentAt, receivedAt);
    },
    observeInstant(platformMs, receivedAt) {
      if (!Number.isFinite(platformMs)) return;
      observe(platformMs - receivedAt, platformMs - receivedAt + POKE_DELIVERY_MS, receivedAt);
    },
  };
}
