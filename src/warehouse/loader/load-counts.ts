/** Counting helpers for LoadResult: totals and the same counts per type. */
import { emptyCounts, type LoadCounts, type LoadResult } from '../../pipeline/batch.ts';

export function emptyLoadResult(): LoadResult {
  return { ...emptyCounts(), byType: {}, newestCreatedAt: null, transactionRetries: 0 };
}

function counter(result: LoadResult, type: string): LoadCounts {
  let counts = result.byType[type];
  if (!counts) {
    counts = emptyCounts();
    result.byType[type] = counts;
  }
  return counts;
}

export function bump(result: LoadResult, type: string, key: keyof LoadCounts, by = 1): void {
  if (by === 0) return;
  result[key] += by;
  counter(result, type)[key] += by;
}

/**
 * Adds `add` into `into`: totals, per-type counts, transaction retries, and the newer of the two
 * `newestCreatedAt`.
 */
export function addLoadResult(into: LoadResult, add: LoadResult): void {
  for (const key of Object.keys(emptyCounts()) as (keyof LoadCounts)[]) {
    into[key] += add[key];
    for (const [type, counts] of Object.entries(add.byType)) counter(into, type)[key] += counts[key];
  }
  into.transactionRetries += add.transactionRetries;
  const newest = add.newestCreatedAt;
  if (newest && (!into.newestCreatedAt || newest > into.newestCreatedAt)) into.newestCreatedAt = newest;
}
