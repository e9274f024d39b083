/**
 * The request budget: the platform allows ~2,000 requests per token per hour and documents no rate-limit
 * headers, so the client paces itself. Every request (each retry attempt and each stream connect too)
 * first takes a token from the bucket of its API token.
 *
 * With Redis the bucket lives in Redis, so a fleet of workers shares one budget per token; without, it
 * lives in this process. Buckets are keyed by a hash of the token, never the token itself.
 */

import type { BudgetRegistry, RequestBudget } from '../http/request-budget-types.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { budgetKeyOf } from './budget-key.ts';
import { createInMemoryRequestBudget } from './in-memory-request-budget.ts';
import { createRedisRequestBudget, type RedisEvalClient } from './redis-request-budget.ts';
import type { BudgetRate } from './token-bucket.ts';

export interface BudgetRegistryOptions {
  rate: BudgetRate;
  /** ioredis client: buckets are shared by every process using the same Redis and prefix. */
  redis?: RedisEvalClient;
  /** Redis key prefix (default `validic-sync:budget:`). */
  keyPrefix?: string;
  clock?: Clock;
}

export function createBudgetRegistry(options: BudgetRegistryOptions): BudgetRegistry {
  const budgets = new Map<string, RequestBudget>();
  return {
    forKey(tokenOrKey: string): RequestBudget {
      const key = budgetKeyOf(tokenOrKey);
      let budget = budgets.get(key);
      if (!budget) {
        budget = createRequestBudget({ ...options, key });
        budgets.set(key, budget);
      }
      return budget;
    },
  };
}

export interface RequestBudgetOptions extends BudgetRegistryOptions {
  /** Already-hashed key (see `budgetKeyOf`). */
  key: string;
}

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  const clock = options.clock ?? systemClock;
  if (options.redis) {
    return createRedisRequestBudget({
      redis: options.redis,
      key: options.key,
      keyPrefix: options.keyPrefix ?? 'validic-sync:budget:',
      rate: options.rate,
      clock,
    });
  }
  return createInMemoryRequestBudget({ key: options.key, rate: options.rate, clock });
}
