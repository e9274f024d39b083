/**
 * Which cells an audit compares (pure): the two sampling designs of README.md, "Which cells".
 *
 * - A command run draws a simple random sample without replacement of `share` of the population
 *   (users × resources × ≤ 30-day windows of the range): any subset of that size is equally likely, so
 *   completeness-interval.ts's exact interval applies.
 * - A scheduled tick takes the next users of a rotation (every user reached in turn) and gives each one
 *   cell: its recent window (the last 30 days) with probability `recentShare`, else one of its history
 *   windows chosen uniformly; the resource is chosen uniformly.
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

/**
 * A scheduled tick's strata as of `today` (UTC, YYYY-MM-DD): the recent window (the last 30 days,
 * today included) and the history windows before it, back over `lookbackDays` (whole windows only).
 * `coverageFrom`: the first day the warehouse is meant to hold (its earliest backfill); windows are cut to
 * start there and those wholly before it are left out, so the audit never counts as drift (nor loads)
 * history nobody asked for.
 */
export function auditStrata(
  today: string,
  lookbackDays: number,
  coverageFrom?: string,
): { recent: DateWindow; history: DateWindow[] } {
  const end = Date.parse(`${today}T00:00:00Z`);
  const span = MAX_REQUEST_WINDOW_DAYS;
  const window = (lastDayMs: number): DateWindow => ({
    startDate: isoDay(lastDayMs - (span - 1) * DAY_MS),
    endDate: isoDay(lastDayMs),
  });
  const history: DateWindow[] = [];
  const windows = Math.max(0, Math.floor(lookbackDays / span) - 1);
  for (let j = 1; j <= windows; j++) history.push(window(end - j * span * DAY_MS));
  const recent = window(end);
  if (coverageFrom === undefined) return { recent, history };
  // ISO dates compare as text.
  const cut = (w: DateWindow): DateWindow =>
    w.startDate < coverageFrom && w.endDate >= coverageFrom ? { ...w, startDate: coverageFrom } : w;
  return { recent: cut(recent), history: history.filter((w) => w.endDate >= coverageFrom).map(cut) };
}

/**
 * A scheduled tick's cells: one per user of `users` (the next of the rotation), in the recent window
 * with probability `recentShare` (always when there is no history window), else in a history window.
 */
export function drawScheduledCells(
  users: readonly string[],
  resources: readonly string[],
  strata: { recent: DateWindow; history: readonly DateWindow[] },
  recentShare: number,
  uniform: UniformInt,
): AuditCell[] {
  if (resources.length === 0) return [];
  const scale = 1_000_000;
  return users.map((uid) => {
    const resource = resources[uniform(0, resources.length - 1)]!;
    const recent = strata.history.length === 0 || uniform(0, scale - 1) < recentShare * scale;
    const window = recent ? strata.recent : strata.history[uniform(0, strata.history.length - 1)]!;
    return { uid, resource, ...window, stratum: recent ? 'recent' : 'history' };
  });
}
