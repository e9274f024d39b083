/**
 * Which cells an audit compares (src/audit/sample-cells.ts): the seeded generator, Floyd's draw, a
 * command run's simple random sample of cells, and a scheduled tick's strata and cells.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  auditStrata,
  drawCommandCells,
  drawDistinct,
  drawTickCells,
  seededUniform,
} from '../../src/audit/sample-cells.ts';
import type { DateWindow } from '../../src/validic/platform-limits.ts';

const DAY_MS = 86_400_000;
const dayMs = (day: string) => Date.parse(`${day}T00:00:00Z`);
const daysInclusive = (w: DateWindow) => (dayMs(w.endDate) - dayMs(w.startDate)) / DAY_MS + 1;
const dayBefore = (day: string) => new Date(dayMs(day) - DAY_MS).toISOString().slice(0, 10);

describe('seededUniform', () => {
  it('draws integers within [from, to], the same sequence for the same seed', () => {
    const a = seededUniform('audit-1');
    const b = seededUniform('audit-1');
    const c = seededUniform('audit-2');
    const fromA = Array.from({ length: 50 }, () => a(3, 9));
    const fromB = Array.from({ length: 50 }, () => b(3, 9));
    const fromC = Array.from({ length: 50 }, () => c(3, 9));
    expect(fromA).toEqual(fromB);
    expect(fromA).not.toEqual(fromC);
    for (const v of fromA) {
      expect(Number.isInteger(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(3);
      expect(v).toBeLessThanOrEqual(9);
    }
  });
});

describe('drawDistinct', () => {
  it('returns count distinct values of [0, population), ascending', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2000 }), fc.nat(), fc.string(), (population, countSeed, seed) => {
        const count = countSeed % (population + 1);
        const drawn = drawDistinct(population, count, seededUniform(seed));
        expect(drawn).toHaveLength(count);
        expect(new Set(drawn).size).toBe(count);
        for (let i = 0; i < drawn.length; i++) {
          expect(Number.isInteger(drawn[i])).toBe(true);
          expect(drawn[i]).toBeGreaterThanOrEqual(0);
          expect(drawn[i]).toBeLessThan(population);
          if (i > 0) expect(drawn[i]).toBeGreaterThan(drawn[i - 1]!);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('returns the whole population when count reaches it', () => {
    const all = Array.from({ length: 17 }, (_, i) => i);
    expect(drawDistinct(17, 17, seededUniform('x'))).toEqual(all);
    expect(drawDistinct(17, 40, seededUniform('x'))).toEqual(all);
    expect(drawDistinct(0, 5, seededUniform('x'))).toEqual([]);
  });

  it('returns nothing for a count of zero or below, and floors a fractional count', () => {
    expect(drawDistinct(10, 0, seededUniform('x'))).toEqual([]);
    expect(drawDistinct(10, -3, seededUniform('x'))).toEqual([]);
    expect(drawDistinct(10, 2.9, seededUniform('x'))).toHaveLength(2);
  });

  it('draws the same values for the same seed and other values for another seed', () => {
    const first = drawDistinct(1000, 10, seededUniform('seed-a'));
    expect(drawDistinct(1000, 10, seededUniform('seed-a'))).toEqual(first);
    expect(drawDistinct(1000, 10, seededUniform('seed-b'))).not.toEqual(first);
  });

  // 2000 draws of 10 of 50: each index is drawn 400 times on average (binomial, sd ≈ 17.9); the band
  // 400 ± 100 is over 5 sd wide, so only a biased draw leaves it.
  const DRAWS = 2000;
  const checkUniform = (draw: (i: number) => number[]) => {
    const counts = new Array<number>(50).fill(0);
    for (let i = 0; i < DRAWS; i++) for (const index of draw(i)) counts[index]! += 1;
    expect(counts.reduce((a, b) => a + b, 0)).toBe(DRAWS * 10);
    for (const count of counts) {
      expect(count).toBeGreaterThan(300);
      expect(count).toBeLessThan(500);
    }
  };

  it('draws every index about equally often from one generator', () => {
    const uniform = seededUniform('uniformity');
    checkUniform(() => drawDistinct(50, 10, uniform));
  });

  it('draws every index about equally often across seeds "0", "1", … (as the coverage test uses)', () => {
    checkUniform((i) => drawDistinct(50, 10, seededUniform(String(i))));
  });

  it('draws each pair of indexes about equally often (subsets, not only indexes, are uniform)', () => {
    // 4 of 8: each of the 28 pairs is in a draw with probability C(6,2)/C(8,4) = 15/70.
    const uniform = seededUniform('pairs');
    const pairs = new Map<string, number>();
    const runs = 7000;
    for (let i = 0; i < runs; i++) {
      const d = drawDistinct(8, 4, uniform);
      for (let a = 0; a < d.length; a++)
        for (let b = a + 1; b < d.length; b++) {
          const key = `${d[a]},${d[b]}`;
          pairs.set(key, (pairs.get(key) ?? 0) + 1);
        }
    }
    expect(pairs.size).toBe(28);
    const expected = (runs * 15) / 70; // 1500, sd ≈ 34
    for (const count of pairs.values()) expect(Math.abs(count - expected)).toBeLessThan(200);
  });
});

const windowsOf = (count: number): DateWindow[] =>
  Array.from({ length: count }, (_, j) => {
    const start = dayMs('2026-01-01') + j * 30 * DAY_MS;
    return {
      startDate: new Date(start).toISOString().slice(0, 10),
      endDate: new Date(start + 29 * DAY_MS).toISOString().slice(0, 10),
    };
  });

describe('drawCommandCells', () => {
  const users = ['u1', 'u2', 'u3'];
  const resources = ['fitness', 'measurements'];
  const windows = windowsOf(7); // population 3 × 2 × 7 = 42

  it('at share 1 gives every user × resource × window exactly once', () => {
    const cells = drawCommandCells(users, resources, windows, 1, seededUniform('all'));
    expect(cells).toHaveLength(42);
    const keys = new Set(cells.map((c) => `${c.uid}|${c.resource}|${c.startDate}|${c.endDate}`));
    expect(keys.size).toBe(42);
    for (const uid of users)
      for (const resource of resources)
        for (const w of windows)
          expect(keys.has(`${uid}|${resource}|${w.startDate}|${w.endDate}`)).toBe(true);
    expect(cells.every((c) => c.stratum === 'all')).toBe(true);
  });

  it('a share above 1 is taken as 1', () => {
    expect(drawCommandCells(users, resources, windows, 3, seededUniform('x'))).toHaveLength(42);
  });

  it('at share 0.05 gives ceil(5 %) distinct cells of the population', () => {
    const cells = drawCommandCells(users, resources, windows, 0.05, seededUniform('five'));
    expect(cells).toHaveLength(Math.ceil(42 * 0.05)); // 3
    expect(new Set(cells.map((c) => `${c.uid}|${c.resource}|${c.startDate}`)).size).toBe(3);
    for (const c of cells) {
      expect(users).toContain(c.uid);
      expect(resources).toContain(c.resource);
      expect(windows).toContainEqual({ startDate: c.startDate, endDate: c.endDate });
    }
  });

  it('a share that makes a whole number of cells is not rounded up by float error', () => {
    // 100 × 0.07 = 7.000000000000001 in floating point: 7 cells, not 8.
    const tenUsers = Array.from({ length: 10 }, (_, i) => `u${i}`);
    const tenResources = Array.from({ length: 10 }, (_, i) => `r${i}`);
    expect(drawCommandCells(tenUsers, tenResources, windowsOf(1), 0.07, seededUniform('x'))).toHaveLength(7);
  });

  it('gives ceil(share × population) cells for any share in (0, 1]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 1000 }),
        (u, r, w, permille) => {
          const population = u * r * w;
          const cells = drawCommandCells(
            Array.from({ length: u }, (_, i) => `u${i}`),
            Array.from({ length: r }, (_, i) => `r${i}`),
            windowsOf(w),
            permille / 1000,
            seededUniform(`${u}-${r}-${w}-${permille}`),
          );
          expect(cells).toHaveLength(Math.ceil((population * permille) / 1000));
          expect(new Set(cells.map((c) => `${c.uid}|${c.resource}|${c.startDate}`)).size).toBe(cells.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives at least one cell for a tiny share', () => {
    expect(drawCommandCells(users, resources, windows, 1e-9, seededUniform('tiny'))).toHaveLength(1);
    expect(drawCommandCells(users, resources, windows, 0, seededUniform('zero'))).toHaveLength(1);
  });

  it('gives nothing for an empty population', () => {
    expect(drawCommandCells([], resources, windows, 1, seededUniform('x'))).toEqual([]);
    expect(drawCommandCells(users, [], windows, 1, seededUniform('x'))).toEqual([]);
    expect(drawCommandCells(users, resources, [], 1, seededUniform('x'))).toEqual([]);
  });

  it('draws the same cells for the same seed', () => {
    const a = drawCommandCells(users, resources, windows, 0.3, seededUniform('repeat'));
    expect(drawCommandCells(users, resources, windows, 0.3, seededUniform('repeat'))).toEqual(a);
  });
});

describe('auditStrata', () => {
  it('cuts the windows at the first day the warehouse is meant to hold, and leaves out those before it', () => {
    const { recent, history } = auditStrata('2026-11-27', 365, '2026-09-15');
    expect(recent).toEqual({ startDate: '2026-10-29', endDate: '2026-11-27' });
    expect(history).toEqual([
      { startDate: '2026-10-04', endDate: '2026-10-28' },
      { startDate: '2026-09-15', endDate: '2026-10-03' },
    ]);
    // Coverage inside the recent window (a stream-only warehouse: the recent poll's lookback).
    expect(auditStrata('2026-11-27', 365, '2026-11-23')).toEqual({
      recent: { startDate: '2026-11-23', endDate: '2026-11-27' },
      history: [],
    });
  });

  it('2026-11-27 over 365 days: the last 30 days, then the 30-day grid windows before them', () => {
    const { recent, history } = auditStrata('2026-11-27', 365);
    expect(recent).toEqual({ startDate: '2026-10-29', endDate: '2026-11-27' });
    expect(daysInclusive(recent)).toBe(30);
    // The newest grid window is cut to end the day before the recent window; the others are whole.
    expect(history[0]).toEqual({ startDate: '2026-10-04', endDate: '2026-10-28' });
    expect(history).toHaveLength(11);
    let next = recent;
    for (const [i, w] of history.entries()) {
      if (i > 0) expect(daysInclusive(w)).toBe(30);
      // On the grid: a multiple of 30 days after 1970-01-01.
      expect((dayMs(w.startDate) / DAY_MS) % 30).toBe(0);
      // Contiguous, going back: each ends the day before the later one starts.
      expect(w.endDate).toBe(dayBefore(next.startDate));
      next = w;
    }
    // Every window starts within the lookback.
    expect(dayMs(history.at(-1)!.startDate)).toBeGreaterThanOrEqual(dayMs('2026-11-27') - 364 * DAY_MS);
  });

  it('a history window names the same days from one day to the next (its start does not move)', () => {
    const day1 = auditStrata('2026-11-27', 365, '2025-06-01');
    const day2 = auditStrata('2026-11-28', 365, '2025-06-01');
    expect(day2.recent).toEqual({ startDate: '2026-10-30', endDate: '2026-11-28' });
    expect(day2.history.map((w) => w.startDate)).toEqual(day1.history.map((w) => w.startDate));
    // Only the newest window's end follows the recent window.
    expect(day2.history[0]).toEqual({ startDate: '2026-10-04', endDate: '2026-10-29' });
    expect(day2.history.slice(1)).toEqual(day1.history.slice(1));
  });

  it('counts windows starting within the lookback only', () => {
    expect(auditStrata('2026-11-27', 30).history).toHaveLength(0);
    expect(auditStrata('2026-11-27', 54).history).toHaveLength(0);
    expect(auditStrata('2026-11-27', 55).history).toEqual([
      { startDate: '2026-10-04', endDate: '2026-10-28' },
    ]);
    expect(auditStrata('2026-11-27', 85).history).toHaveLength(2);
  });

  it('crosses a leap day and a year boundary in whole UTC days', () => {
    const { recent, history } = auditStrata('2028-03-10', 120);
    expect(recent).toEqual({ startDate: '2028-02-10', endDate: '2028-03-10' });
    expect(history).toEqual([
      { startDate: '2028-01-27', endDate: '2028-02-09' },
      { startDate: '2027-12-28', endDate: '2028-01-26' },
      { startDate: '2027-11-28', endDate: '2027-12-27' },
    ]);
  });
});

describe('drawTickCells', () => {
  const strata = auditStrata('2026-11-27', 365);
  const resources = ['fitness', 'measurements', 'sleep', 'nutrition'];
  const W = strata.history.length;

  it('draws recentShare of the cells from the recent stratum and the rest from history, each without repeats', () => {
    const cells = drawTickCells(200, resources, strata, 100, 0.5, seededUniform('tick'));
    expect(cells).toHaveLength(100);
    const recent = cells.filter((c) => c.stratum === 'recent');
    const history = cells.filter((c) => c.stratum === 'history');
    expect(recent).toHaveLength(50);
    expect(history).toHaveLength(50);
    for (const c of recent) expect({ startDate: c.startDate, endDate: c.endDate }).toEqual(strata.recent);
    for (const c of history)
      expect(strata.history).toContainEqual({ startDate: c.startDate, endDate: c.endDate });
    for (const c of cells) {
      expect(resources).toContain(c.resource);
      expect(Number.isInteger(c.userRank) && c.userRank >= 0 && c.userRank < 200).toBe(true);
    }
    const keys = (list: typeof cells) =>
      new Set(list.map((c) => `${c.userRank}|${c.resource}|${c.startDate}`));
    expect(keys(recent).size).toBe(50);
    expect(keys(history).size).toBe(50);
  });

  it('no history window: every cell recent; a stratum smaller than its share gives all its cells', () => {
    const noHistory = auditStrata('2026-11-27', 30);
    const cells = drawTickCells(3, resources, noHistory, 40, 0, seededUniform('tick'));
    // 3 users × 4 resources: the whole recent stratum, once each.
    expect(cells).toHaveLength(12);
    expect(cells.every((c) => c.stratum === 'recent')).toBe(true);
    expect(new Set(cells.map((c) => `${c.userRank}|${c.resource}`)).size).toBe(12);
  });

  it('reaches every cell of a stratum about equally often: users, resources and windows alike', () => {
    // 10 users × 4 resources × W windows; 2,000 ticks of 10 history cells each.
    const users = 10;
    const counts = new Map<string, number>();
    const uniform = seededUniform('even');
    for (let i = 0; i < 2000; i++)
      for (const c of drawTickCells(users, resources, strata, 10, 0, uniform))
        counts.set(
          `${c.userRank}|${c.resource}|${c.startDate}`,
          (counts.get(`${c.userRank}|${c.resource}|${c.startDate}`) ?? 0) + 1,
        );
    const cells = users * resources.length * W;
    expect(counts.size).toBe(cells);
    // Each cell is drawn 20,000 / cells times on average (binomial, sd ≈ 6.2 at 440 cells).
    const mean = 20_000 / cells;
    for (const n of counts.values()) expect(Math.abs(n - mean)).toBeLessThan(6 * Math.sqrt(mean));
  });

  it('draws users by rank uniformly, not a stretch of the uid order', () => {
    // 100,000 users, 94 cells: the ranks spread over the whole order (a stretch would sit in one place).
    const cells = drawTickCells(100_000, resources, strata, 94, 0.5, seededUniform('spread'));
    const ranks = cells.map((c) => c.userRank).sort((a, b) => a - b);
    expect(ranks[0]!).toBeLessThan(10_000);
    expect(ranks.at(-1)!).toBeGreaterThan(90_000);
    expect(new Set(ranks.map((r) => Math.floor(r / 10_000))).size).toBeGreaterThanOrEqual(8);
  });

  it('no users, resources or cells asked: nothing', () => {
    expect(drawTickCells(0, resources, strata, 10, 0.5, seededUniform('x'))).toEqual([]);
    expect(drawTickCells(10, [], strata, 10, 0.5, seededUniform('x'))).toEqual([]);
    expect(drawTickCells(10, resources, strata, 0, 0.5, seededUniform('x'))).toEqual([]);
  });

  it('draws the same cells for the same seed', () => {
    const a = drawTickCells(500, resources, strata, 40, 0.5, seededUniform('again'));
    expect(drawTickCells(500, resources, strata, 40, 0.5, seededUniform('again'))).toEqual(a);
  });
});
