/**
 * The hypergeometric CDF and the exact completeness interval (src/audit/completeness-interval.ts):
 * the CDF against exact binomial coefficients, the interval's shape, and its coverage over simulated
 * simple random samples drawn the way a command run draws them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cdf, estimateCompleteness } from '../../src/audit/completeness-interval.ts';
import { drawDistinct, seededUniform } from '../../src/audit/sample-cells.ts';

/** C(n, k) exactly. */
function binomial(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let result = 1n;
  for (let i = 1; i <= Math.min(k, n - k); i++) result = (result * BigInt(n - i + 1)) / BigInt(i);
  return result;
}

/** P(X ≤ x), X hypergeometric(N, K, n), by summing the exact pmf's numerators. */
function bruteCdf(x: number, N: number, K: number, n: number): number {
  let below = 0n;
  for (let i = 0; i <= Math.min(x, n); i++) below += binomial(K, i) * binomial(N - K, n - i);
  // Below 2^53 for N ≤ 40 (C(40, 20) ≈ 1.4e11): both conversions are exact.
  return Number(below) / Number(binomial(N, n));
}

/** N, K ≤ N, n ≤ N, as a fast-check arbitrary. */
const population = (maxN: number) =>
  fc
    .integer({ min: 1, max: maxN })
    .chain((N) => fc.tuple(fc.constant(N), fc.integer({ min: 0, max: N }), fc.integer({ min: 0, max: N })));

describe('cdf', () => {
  it('matches the exact pmf summed with BigInt binomial coefficients (N ≤ 40)', () => {
    fc.assert(
      fc.property(
        population(40).chain(([N, K, n]) =>
          fc.tuple(fc.constant(N), fc.constant(K), fc.constant(n), fc.integer({ min: -2, max: n + 2 })),
        ),
        ([N, K, n, x]) => {
          expect(cdf(x, N, K, n)).toBeCloseTo(bruteCdf(x, N, K, n), 12);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('matches at every x for a few fixed populations', () => {
    for (const [N, K, n] of [
      [40, 20, 20],
      [40, 39, 10],
      [40, 1, 39],
      [30, 0, 10],
      [30, 30, 10],
      [25, 12, 0],
      [25, 12, 25],
    ] as const)
      for (let x = -1; x <= n + 1; x++) expect(cdf(x, N, K, n)).toBeCloseTo(bruteCdf(x, N, K, n), 12);
  });

  it('is 0 below the support and 1 at and above its top', () => {
    // N = 10, K = 8, n = 5: X ranges over 3..5.
    expect(cdf(2, 10, 8, 5)).toBe(0);
    expect(cdf(5, 10, 8, 5)).toBe(1);
    expect(cdf(7, 10, 8, 5)).toBe(1);
    expect(cdf(3, 10, 8, 5)).toBeGreaterThan(0);
    expect(cdf(4, 10, 8, 5)).toBeLessThan(1);
  });

  it('stays finite and monotone for large populations', () => {
    const N = 100_000;
    const K = 99_000;
    const n = 5_000;
    let previous = 0;
    for (let x = 4_900; x <= 5_000; x += 5) {
      const p = cdf(x, N, K, n);
      expect(Number.isFinite(p)).toBe(true);
      expect(p).toBeGreaterThanOrEqual(previous);
      previous = p;
    }
    expect(previous).toBe(1);
  });
});

describe('estimateCompleteness', () => {
  it('is null when nothing was sampled', () => {
    expect(estimateCompleteness(0, 0, 100)).toBeNull();
  });

  it('gives [p, p] when the sample is the whole population', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 3000 })
          .chain((N) => fc.tuple(fc.constant(N), fc.integer({ min: 0, max: N }))),
        ([N, complete]) => {
          const e = estimateCompleteness(complete, N, N)!;
          expect(e.estimate).toBe(complete / N);
          expect(e.lower).toBe(complete / N);
          expect(e.upper).toBe(complete / N);
          expect(e).toMatchObject({ sampled: N, complete, population: N, confidence: 0.95 });
        },
      ),
    );
  });

  it('takes a population below the sample as the sample (the population grew while drawing)', () => {
    const e = estimateCompleteness(7, 10, 4)!;
    expect(e.population).toBe(10);
    expect([e.lower, e.estimate, e.upper]).toEqual([0.7, 0.7, 0.7]);
  });

  it('lower ≤ estimate ≤ upper, all within [0, 1], at any confidence and sample size', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 1, max: 400 }),
        fc.nat(),
        fc.double({ min: 0.5, max: 0.999, noNaN: true }),
        (extra, sampled, seed, confidence) => {
          const N = sampled + extra;
          const complete = seed % (sampled + 1);
          const e = estimateCompleteness(complete, sampled, N, confidence)!;
          expect(e.lower).toBeGreaterThanOrEqual(0);
          expect(e.lower).toBeLessThanOrEqual(e.estimate);
          expect(e.estimate).toBeLessThanOrEqual(e.upper);
          expect(e.upper).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('the interval always holds the maximum-likelihood K and only K consistent with the sample', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3000 }),
        fc.nat(),
        fc.nat(),
        fc.double({ min: 0.5, max: 0.999, noNaN: true }),
        (N, sampledSeed, seed, confidence) => {
          const sampled = 1 + (sampledSeed % N);
          const complete = seed % (sampled + 1);
          const failures = sampled - complete;
          const e = estimateCompleteness(complete, sampled, N, confidence)!;
          const lowerK = Math.round(e.lower * N);
          const upperK = Math.round(e.upper * N);
          expect(lowerK).toBeGreaterThanOrEqual(complete);
          expect(upperK).toBeLessThanOrEqual(N - failures);
          expect(lowerK).toBeLessThanOrEqual(upperK);
          // The hypergeometric MLE of K: floor((N + 1) · complete / sampled), within what the sample allows.
          const mle = Math.min(Math.max(Math.floor(((N + 1) * complete) / sampled), complete), N - failures);
          expect(lowerK).toBeLessThanOrEqual(mle);
          expect(mle).toBeLessThanOrEqual(upperK);
        },
      ),
      { numRuns: 300 },
    );
  });

  // A sample of nearly the whole population: complete ÷ sampled can fall between two possible K/N and
  // outside the exact interval (79 complete of 80 sampled from 81: K is 79 or 80, and K = 79 gives
  // P(X ≥ 79) = 2/81 < 0.025, so the interval is [80/81, 80/81]); the estimate is then kept inside it.
  it('keeps the estimate within the interval even for a sample of nearly all cells', () => {
    const e = estimateCompleteness(79, 80, 81)!;
    expect(e.lower).toBeLessThanOrEqual(e.estimate);
    expect(e.estimate).toBe(80 / 81);
  });

  it('bounds are the exact ones: the extreme K not rejected at (1 − confidence) / 2 per side (N ≤ 40)', () => {
    fc.assert(
      fc.property(
        population(40).filter(([, , n]) => n > 0),
        fc.nat(),
        ([N, , n], seed) => {
          const complete = seed % (n + 1);
          const alpha = 0.025;
          const Ks = Array.from({ length: N + 1 }, (_, K) => K).filter(
            (K) => K >= complete && N - K >= n - complete,
          );
          const pAtLeast = (K: number) => 1 - bruteCdf(complete - 1, N, K, n);
          const pAtMost = (K: number) => bruteCdf(complete, N, K, n);
          // Skip the rare populations where a tail probability sits on alpha (float noise decides).
          fc.pre(
            Ks.every((K) => Math.abs(pAtLeast(K) - alpha) > 1e-9 && Math.abs(pAtMost(K) - alpha) > 1e-9),
          );
          const lowerK = Ks.find((K) => pAtLeast(K) > alpha)!;
          const upperK = Math.max(lowerK, ...Ks.filter((K) => pAtMost(K) > alpha));
          const e = estimateCompleteness(complete, n, N)!;
          expect(e.lower).toBe(lowerK / N);
          expect(e.upper).toBe(upperK / N);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('with no failure in a sample smaller than the population, the lower bound is below 1', () => {
    for (const [N, n] of [
      [500, 25],
      [500, 100],
      [2000, 400],
      [300, 285],
      [40, 38],
      [2, 1],
    ] as const) {
      const e = estimateCompleteness(n, n, N)!;
      expect(e.estimate).toBe(1);
      expect(e.upper).toBe(1);
      expect(e.lower).toBeLessThan(1);
    }
  });

  it('with no failure, the lower bound is below 1 exactly when the unsampled share exceeds (1 − confidence) / 2', () => {
    // P(all n complete | K = N − 1) = (N − n) / N: unless that exceeds alpha, even one incomplete cell in
    // the population is rejected and the exact lower bound is 100 %.
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 5000 }), fc.nat(), (N, seed) => {
        const n = 1 + (seed % (N - 1));
        const alpha = 0.025;
        fc.pre(Math.abs((N - n) / N - alpha) > 1e-9);
        const e = estimateCompleteness(n, n, N)!;
        expect(e.lower < 1).toBe((N - n) / N > alpha);
      }),
      { numRuns: 500 },
    );
    // e.g. 99 clean cells of 100: one incomplete cell would show up in the sample with probability 0.99.
    expect(estimateCompleteness(99, 99, 100)!.lower).toBe(1);
  });

  it('the interval narrows as the sample grows', () => {
    const widths = [0.05, 0.1, 0.2, 0.5].map((share) => {
      const n = 2000 * share;
      const e = estimateCompleteness(Math.round(n * 0.99), n, 2000)!;
      return e.upper - e.lower;
    });
    for (let i = 1; i < widths.length; i++) expect(widths[i]).toBeLessThan(widths[i - 1]!);
  });

  describe('coverage over simulated simple random samples (drawDistinct, as a command run draws)', () => {
    const SAMPLES = 400;
    for (const [N, K] of [
      [500, 480],
      [2000, 1990],
      [300, 270],
    ] as const)
      for (const share of [0.05, 0.2]) {
        it(`the 95 % interval holds K/N = ${K}/${N} in ≥ 95 % of ${SAMPLES} samples of ${share * 100} %`, () => {
          const n = Math.ceil(N * share);
          let covered = 0;
          for (let i = 0; i < SAMPLES; i++) {
            const drawn = drawDistinct(N, n, seededUniform(String(i)));
            const complete = drawn.filter((index) => index < K).length;
            const e = estimateCompleteness(complete, n, N, 0.95)!;
            if (e.lower <= K / N && K / N <= e.upper) covered += 1;
          }
          expect(covered / SAMPLES).toBeGreaterThanOrEqual(0.95);
        });
      }
  });
});
