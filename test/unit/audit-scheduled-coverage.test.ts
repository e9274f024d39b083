/**
 * The scheduled audit's interval holds: the tick's sampler (drawTickCells, at the default plan's audit
 * requests per tick) and the estimate status shows (summarizeStratum, estimateStratum), over 1,000
 * simulated weeks at each population size, with drift spread uniformly (10 % of cells) and concentrated
 * in the newest 5 % of uids (half of their cells). In every case and stratum the 95 % interval must hold
 * the true share of complete cells in at least 94 % of the weeks (the interval is exact for the design,
 * so about 95 % or more is expected; 94 % leaves room for the 1,000 weeks' own spread, sd ≈ 0.7 %).
 *
 * The true share is known exactly: the drifted cells are the first D of an affine permutation of the
 * cell numbers (a·i + b mod M, a prime to M), a fixed set as the interval assumes, O(1) to test.
 */
import { describe, expect, it } from 'vitest';
import {
  auditStrata,
  drawTickCells,
  seededUniform,
  stratumPopulations,
} from '../../src/audit/sample-cells.ts';
import {
  estimateStratum,
  type ScheduledOutcome,
  summarizeStratum,
} from '../../src/audit/stratum-estimate.ts';
import { budgetPlanInput, planRequestBudget } from '../../src/budget/plan-request-budget.ts';
import { configSchema } from '../../src/config/schema.ts';
import { V2_RESOURCES } from '../../src/validic/platform-limits.ts';

const WEEKS = 1000;
const SIZES = [300, 1_000, 2_000, 10_000, 100_000];
const TODAY = '2026-11-27';

const config = configSchema.parse({ organizations: [{ orgId: 'org', token: 't' }] });
const org = config.organizations[0]!;
const resources: string[] = [...V2_RESOURCES];
// An org-wide backfill of a year: the history stratum reaches back over the whole lookback.
const strata = auditStrata(TODAY, config.audit.lookbackDays, '2025-11-27');
const ticksPerWeek = Math.round((7 * 24 * 60) / config.schedules.auditMinutes);

/** Cells a tick audits: the default plan's audit requests for one tick, with the stream healthy. */
function cellsPerTick(users: number): number {
  const plan = planRequestBudget(
    budgetPlanInput(
      config,
      org,
      { activeUsers: users, dormantUsers: 0, pushFetchesLastHour: 0 },
      {
        polling: false,
        days: 0,
      },
    ),
  );
  return Math.floor((plan.perHour.audit * config.schedules.auditMinutes) / 60);
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** A fixed set of exactly `drifted` of `size` cells: j is drifted when (a·j + b) mod size < drifted. */
function driftedSet(size: number, drifted: number, uniform: (from: number, to: number) => number) {
  let a = 1;
  if (size > 1)
    do a = uniform(1, size - 1);
    while (gcd(a, size) !== 1);
  const b = uniform(0, size - 1);
  // a·j < size² ≤ 10^14 < 2^53: exact in doubles.
  return { drifted, has: (j: number) => (a * j + b) % size < drifted };
}

type Pattern = 'uniform' | 'newest 5 %';

/** A stratum's truth: which cells (numbered as drawTickCells numbers them) drift, and the true share. */
function truthOf(
  pattern: Pattern,
  users: number,
  windows: number,
  uniform: (f: number, t: number) => number,
) {
  const R = resources.length;
  const size = users * R * windows;
  if (pattern === 'uniform') {
    const set = driftedSet(size, Math.round(size * 0.1), uniform);
    return { share: (size - set.drifted) / size, drifts: (_rank: number, cell: number) => set.has(cell) };
  }
  // The newest 5 % of uids (the last ranks in uid order), half of their cells drifted.
  const newest = Math.ceil(users * 0.05);
  const first = users - newest;
  const inNewest = newest * R * windows;
  const set = driftedSet(inNewest, Math.floor(inNewest / 2), uniform);
  return {
    share: (size - set.drifted) / size,
    drifts: (rank: number, _cell: number, window: number, resource: number) =>
      rank >= first && set.has((window * newest + (rank - first)) * R + resource),
  };
}

interface Tally {
  weeks: number;
  held: number;
  meanWidth: number;
}

function simulate(users: number): Record<Pattern, Record<'recent' | 'history', Tally>> {
  const R = resources.length;
  const W = strata.history.length;
  const populations = stratumPopulations(users, R, W);
  const perTick = cellsPerTick(users);
  const windowOf = new Map(strata.history.map((w, i) => [w.startDate, i]));
  const resourceOf = new Map(resources.map((r, i) => [r, i]));
  const patterns: Pattern[] = ['uniform', 'newest 5 %'];
  const result = Object.fromEntries(
    patterns.map((p) => [
      p,
      {
        recent: { weeks: 0, held: 0, meanWidth: 0 },
        history: { weeks: 0, held: 0, meanWidth: 0 },
      },
    ]),
  ) as Record<Pattern, Record<'recent' | 'history', Tally>>;
  for (let week = 0; week < WEEKS; week++) {
    const uniform = seededUniform(`coverage-${users}-${week}`);
    const truths = patterns.map((p) => ({
      pattern: p,
      recent: truthOf(p, users, 1, uniform),
      history: truthOf(p, users, W, uniform),
    }));
    // The week's audits in the order they happened, per stratum: cell number and its coordinates.
    const audits = { recent: [] as number[][], history: [] as number[][] };
    for (let tick = 0; tick < ticksPerWeek; tick++)
      for (const cell of drawTickCells(
        users,
        resources,
        strata,
        perTick,
        config.audit.recentShare,
        uniform,
      )) {
        const resource = resourceOf.get(cell.resource)!;
        const window = cell.stratum === 'recent' ? 0 : windowOf.get(cell.startDate)!;
        const number = (window * users + cell.userRank) * R + resource;
        audits[cell.stratum].push([number, cell.userRank, window, resource]);
      }
    for (const truth of truths)
      for (const stratum of ['recent', 'history'] as const) {
        const { share, drifts } = truth[stratum];
        const sample = summarizeStratum(
          audits[stratum].map(([number, rank, window, resource]) => ({
            key: number!,
            outcome: (drifts(rank!, number!, window!, resource!) ? 'drift' : 'complete') as ScheduledOutcome,
          })),
        );
        const estimate = estimateStratum(sample, populations[stratum])!;
        const tally = result[truth.pattern][stratum];
        tally.weeks++;
        // Bounds are multiples of 1/N: compare with a little slack for the division.
        if (estimate.lower <= share + 1e-12 && share <= estimate.upper + 1e-12) tally.held++;
        tally.meanWidth += (estimate.upper - estimate.lower) / WEEKS;
      }
  }
  return result;
}

describe('the scheduled audit over simulated weeks', () => {
  it('the sampler audits the plan’s share: cells per tick at 2,000 requests an hour', () => {
    expect(org.requestsPerHour).toBe(2000);
    expect(cellsPerTick(1_000)).toBeGreaterThan(50);
    expect(ticksPerWeek).toBe(168);
    expect(strata.history.length).toBeGreaterThanOrEqual(10);
  });

  for (const users of SIZES)
    it(`at ${users.toLocaleString('en-US')} users the 95 % interval holds the truth in ≥ 94 % of ${WEEKS} weeks`, () => {
      const result = simulate(users);
      const lines: string[] = [];
      for (const [pattern, strataTally] of Object.entries(result))
        for (const [stratum, t] of Object.entries(strataTally))
          lines.push(
            `${pattern} ${stratum}: held ${t.held}/${t.weeks} (${((100 * t.held) / t.weeks).toFixed(1)} %), mean width ${(100 * t.meanWidth).toFixed(2)} points`,
          );
      console.log(`${users} users\n  ${lines.join('\n  ')}`);
      for (const strataTally of Object.values(result))
        for (const t of Object.values(strataTally)) {
          expect(t.weeks).toBe(WEEKS);
          expect(t.held / t.weeks, lines.join('\n')).toBeGreaterThanOrEqual(0.94);
        }
    });
});
