/**
 * Which cells an audit compares (pure): the two sampling designs of README.md, "Which cells".
 *
 * - A command run draws a simple random sample without replacement of `share` of the population
 *   (users × resources × ≤ 30-day windows of the range): any subset of that size is equally likely, so
 *   completeness-interval.ts's exact interval applies.
 * - A scheduled tick draws a simple random sample without replacement within each stratum: `recentShare`
 *   of its cells from the recent stratum (users × resources, each in the last 30 days), the rest from the
 *   history stratum (users × resources × the 30-day windows of the grid before it). Users are named by
 *   their rank in uid order; the job reads the uids of the ranks drawn.
 *
 * Random choices come from a seeded generator (pure-rand's xoroshiro128+): the same seed draws the same
 * cells, so a run can be repeated exactly.
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { DateWindow } from '../validic/platform-limits.ts';
import { MAX_REQUEST_WINDOW_DAYS } from '../validic/platform-limits.ts';
import type { AuditCell } from '../warehouse/audits.ts';

/** A generator of uniform integers in [from, to], seeded. */
export type UniformInt = (from: number, to: number) => number;

/** The seed as a 32-bit integer (any text: a number, a word). */
export function seededUniform(seed: string): UniformInt {
  let hash = 2166136261;
  for (const char of seed) hash = Math.imul(hash ^ char.codePointAt(0)!, 16777619);
  const rng = xoroshiro128plus(hash | 0);
  return (from, to) => uniformInt(rng, from, to);
}

/**
 * `count` distinct integers of [0, population), each subset of that size equally likely (Floyd's
 * algorithm: `count` draws, no shuffle of the whole population), in ascending order.
 */
export function drawDistinct(population: number, count: number, uniform: UniformInt): number[] {
  const n = Math.min(Math.max(0, Math.floor(count)), population);
  if (n === population) return Array.from({ length: population }, (_, i) => i);
  const chosen = new Set<number>();
  for (let j = population - n; j < population; j++) {
    const t = uniform(0, j);
    chosen.add(chosen.has(t) ? j : t);
  }
  return [...chosen].sort((a, b) => a - b);
}

/** Cells in the population of a command run: users × resources × windows. */
export function populationSize(users: number, resources: number, windows: number): number {
  return users * resources * windows;
}

/**
 * A command run's cells: `share` (0..1] of users × resources × windows, at least one cell when the
 * population is not empty. Cells are numbered window-major, then user, then resource.
 */
export function drawCommandCells(
  users: readonly string[],
  resources: readonly string[],
  windows: readonly DateWindow[],
  share: number,
  uniform: UniformInt,
): AuditCell[] {
  const population = populationSize(users.length, resources.length, windows.length);
  if (population === 0) return [];
  const count = Math.max(1, Math.ceil(population * Math.min(share, 1) - 1e-9));
  return drawDistinct(population, count, uniform).map((index) => {
    const resource = resources[index % resources.length]!;
    const rest = Math.floor(index / resources.length);
    const uid = users[rest % users.length]!;
    const window = windows[Math.floor(rest / users.length)]!;
    return { uid, resource, startDate: window.startDate, endDate: window.endDate, stratum: 'all' };
  });
}

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The scheduled audit's two strata as of a day: the recent window and the history windows before it. */
export interface AuditStrata {
  /** The last 30 days, today included (cut at the first day the warehouse is meant to hold). */
  recent: DateWindow;
  /** The grid's 30-day windows before the recent one, newest first. */
  history: DateWindow[];
}

/**
 * A scheduled tick's strata as of `today` (UTC, YYYY-MM-DD).
 *
 * - recent: the last 30 days, today included. Its cell is a user × resource: the days move with today,
 *   the cell does not.
 * - history: the windows of a fixed grid of 30 days (each starts a multiple of 30 days after 1970-01-01)
 *   that start within `lookbackDays` of today and before the recent window, the newest one cut to end the
 *   day before the recent window. A history cell (user × resource × grid window) names the same days from
 *   one day to the next, so cells audited on different days are the same cell or different ones, never
 *   overlapping halves of each other.
 *
 * `coverageFrom`: the first day the warehouse is meant to hold (its earliest org-wide backfill); windows
 * are cut to start there and those wholly before it are left out, so the audit never counts as drift (nor
 * loads) history nobody asked for.
 */
export function auditStrata(today: string, lookbackDays: number, coverageFrom?: string): AuditStrata {
  const span = MAX_REQUEST_WINDOW_DAYS;
  const todayDay = Math.floor(Date.parse(`${today}T00:00:00Z`) / DAY_MS);
  const recentStart = todayDay - (span - 1);
  const lookbackStart = todayDay - lookbackDays + 1;
  const coverageDay =
    coverageFrom === undefined ? undefined : Math.floor(Date.parse(`${coverageFrom}T00:00:00Z`) / DAY_MS);
  const cut = (startDay: number, endDay: number): DateWindow | undefined => {
    const start = coverageDay === undefined ? startDay : Math.max(startDay, coverageDay);
    return start > endDay
      ? undefined
      : { startDate: isoDay(start * DAY_MS), endDate: isoDay(endDay * DAY_MS) };
  };
  const recent = cut(recentStart, todayDay) ?? {
    startDate: isoDay(recentStart * DAY_MS),
    endDate: isoDay(todayDay * DAY_MS),
  };
  const history: DateWindow[] = [];
  // The newest grid start before the recent window, then back while within the lookback.
  for (let start = Math.floor((recentStart - 1) / span) * span; start >= lookbackStart; start -= span) {
    const window = cut(start, Math.min(start + span - 1, recentStart - 1));
    if (window) history.push(window);
  }
  return { recent, history };
}

/** Cells in each stratum of a tick: users × resources, and users × resources × history windows. */
export function stratumPopulations(
  users: number,
  resources: number,
  historyWindows: number,
): { recent: number; history: number } {
  return { recent: users * resources, history: users * resources * historyWindows };
}

/** A cell a tick drew, its user named by rank (0-based, uid byte order) among the pollable users. */
export interface RankedCell {
  userRank: number;
  resource: string;
  startDate: string;
  endDate: string;
  stratum: 'recent' | 'history';
}

/**
 * A scheduled tick's cells: `count` cells, `recentShare` of them (rounded; all when there is no history
 * window) drawn from the recent stratum and the rest from the history stratum, each a simple random sample
 * without replacement of its stratum (Floyd's draw over the cell numbers), so every cell of a stratum is
 * equally likely and so is every set of cells of the same size. A stratum smaller than its share gives
 * all its cells. Cells are numbered resource-minor: recent `rank × R + resource`, history
 * `(window × users + rank) × R + resource`.
 */
export function drawTickCells(
  users: number,
  resources: readonly string[],
  strata: AuditStrata,
  count: number,
  recentShare: number,
  uniform: UniformInt,
): RankedCell[] {
  const R = resources.length;
  if (users <= 0 || R === 0 || count <= 0) return [];
  const sizes = stratumPopulations(users, R, strata.history.length);
  const recentCount = strata.history.length === 0 ? count : Math.round(count * recentShare);
  const cells: RankedCell[] = [];
  for (const index of drawDistinct(sizes.recent, recentCount, uniform))
    cells.push({
      userRank: Math.floor(index / R),
      resource: resources[index % R]!,
      ...strata.recent,
      stratum: 'recent',
    });
  for (const index of drawDistinct(sizes.history, count - recentCount, uniform)) {
    const rest = Math.floor(index / R);
    cells.push({
      userRank: rest % users,
      resource: resources[index % R]!,
      ...strata.history[Math.floor(rest / users)]!,
      stratum: 'history',
    });
  }
  return cells;
}
