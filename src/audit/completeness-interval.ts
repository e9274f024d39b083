/**
 * The completeness estimate and its exact confidence interval (pure): `complete` of `sampled` cells drawn
 * without replacement from `population` were complete; how many of the population are? The count of
 * complete cells in such a sample is hypergeometric, so the interval is the exact (Clopper–Pearson
 * style) one for the hypergeometric: it holds at any sample size, stays honest when no drift was seen
 * (a few hundred clean cells do not prove 100 %), and narrows to the true figure when the sample is the
 * whole population.
 *
 * Written here rather than taken from a package: the one exact hypergeometric CDF on npm (@stdlib) brings
 * about 170 packages; the pmf's ratio recurrence, summed in log space, is a few lines and needs no
 * log-gamma.
 */

export interface CompletenessEstimate {
  /** complete ÷ sampled (kept inside the interval): the share of the population's cells estimated complete. */
  estimate: number;
  /** The interval's bounds, as shares of the population. */
  lower: number;
  upper: number;
  /** Confidence level of the interval, e.g. 0.95. */
  confidence: number;
  sampled: number;
  complete: number;
  population: number;
}

/**
 * The estimate with its two-sided exact interval at `confidence`. Null when nothing was sampled.
 * `population` below `sampled` is taken as `sampled` (the population grew while the sample was drawn).
 */
export function estimateCompleteness(
  complete: number,
  sampled: number,
  population: number,
  confidence = 0.95,
): CompletenessEstimate | null {
  if (sampled <= 0) return null;
  const N = Math.max(population, sampled);
  const alpha = (1 - confidence) / 2;
  const failures = sampled - complete;
  // K: complete cells in the population. K ranges over [complete, N − failures].
  const lowestK = complete;
  const highestK = N - failures;
  // Lower bound: the least K under which seeing ≥ complete is not too unlikely (P ≥ alpha); P(X ≥ k | K)
  // grows with K, so bisect.
  const lower = firstInteger(lowestK, highestK, (K) => 1 - cdf(complete - 1, N, K, sampled) > alpha);
  // Upper bound: the largest K under which seeing ≤ complete is not too unlikely; P(X ≤ k | K) falls with K.
  const upper = firstInteger(lowestK, highestK, (K) => cdf(complete, N, K, sampled) <= alpha) - 1;
  const high = Math.max(upper, lower) / N;
  return {
    // complete ÷ sampled is not always a possible K ÷ N: a sample of nearly the whole population can put
    // it between two of them and outside the exact interval (79 of 80 drawn from 81 leaves only K = 80).
    // The nearest value of the interval is then the estimate.
    estimate: Math.min(Math.max(complete / sampled, lower / N), high),
    lower: lower / N,
    upper: high,
    confidence,
    sampled,
    complete,
    population: N,
  };
}

/** The least integer in [from, to] for which `holds` (monotone: false … false true … true); to + 1 when none. */
function firstInteger(from: number, to: number, holds: (n: number) => boolean): number {
  let lo = from;
  let hi = to + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (holds(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * P(X ≤ x) for X hypergeometric: `n` draws without replacement from `N` items of which `K` are successes.
 * The pmf by the ratio p(i+1)/p(i) = (K−i)(n−i) / ((i+1)(N−K−n+i+1)), in logs relative to the mode,
 * walked outward from the mode in both directions until a term falls below e^−60 of the mode's (the rest
 * of the tail is below 1e−24 of the total), and normalised by its own sum: no factorials, and a few
 * standard deviations of terms rather than the whole support (an interval's bisection calls this some 40
 * times, over samples of thousands of cells).
 */
export function cdf(x: number, N: number, K: number, n: number): number {
  const min = Math.max(0, n + K - N);
  const max = Math.min(n, K);
  if (x < min) return 0;
  if (x >= max) return 1;
  const mode = Math.min(max, Math.max(min, Math.floor(((n + 1) * (K + 1)) / (N + 2))));
  const FLOOR = -60;
  let below = 0;
  let total = 1; // the mode's own term, e^0
  if (mode <= x) below = 1;
  let log = 0;
  for (let i = mode; i < max; i++) {
    log += Math.log(((K - i) * (n - i)) / ((i + 1) * (N - K - n + i + 1)));
    if (log < FLOOR) break;
    const p = Math.exp(log);
    total += p;
    if (i + 1 <= x) below += p;
  }
  log = 0;
  for (let i = mode; i > min; i--) {
    // p(i−1)/p(i) = i(N−K−n+i) / ((K−i+1)(n−i+1))
    log += Math.log((i * (N - K - n + i)) / ((K - i + 1) * (n - i + 1)));
    if (log < FLOOR) break;
    const p = Math.exp(log);
    total += p;
    if (i - 1 <= x) below += p;
  }
  return below / total;
}

/**
 * 0.99347 → `99.34 %`: rounded down (a share below 1 never shows as 100 %), or up for an interval's upper
 * bound, so the printed interval always contains the computed one.
 */
export function formatShare(share: number, round: 'down' | 'up' = 'down'): string {
  const rounded = round === 'up' ? Math.ceil(share * 10_000 - 1e-9) : Math.floor(share * 10_000 + 1e-9);
  return `${rounded / 100} %`;
}
