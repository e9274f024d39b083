/**
 * The request budget of one process (no Redis): a token bucket in memory. Taking a token is synchronous,
 * so concurrent callers in the process cannot both take the last one.
 */

import type { RequestBudget } from '../http/request-budget-types.ts';
import type { Clock } from '../time/clock.ts';
import { type BucketState, type BudgetRate, bucketParams, refill, takeToken } from './token-bucket.ts';

export interface InMemoryRequestBudgetOptions {
  key: string;
  rate: BudgetRate;
  clock: Clock;
}

export function createInMemoryRequestBudget(options: InMemoryRequestBudgetOptions): RequestBudget {
  const params = bucketParams(options.rate);
  const { clock } = options;
  let state: BucketState | undefined;
  return {
    key: options.key,
    async take(signal?: AbortSignal): Promise<void> {
      for (;;) {
        signal?.throwIfAborted();
        const result = takeToken(state, params, clock.now());
        state = result.state;
        if (result.granted) return;
        await clock.sleep(result.waitMs, signal);
      }
    },
    async remaining(): Promise<number> {
      return Math.floor(refill(state, params, clock.now()));
    },
  };
}
