/**
 * What a request budget is, apart from how it is built (request-budget.ts) and stored
 * (in-memory-request-budget.ts, redis-request-budget.ts), so those files import it without a cycle.
 */
export interface RequestBudget {
  /** Hashed key of the bucket (safe to log). */
  readonly key: string;
  /** Resolves when a request may be sent; rejects when `signal` aborts while waiting. */
  take(signal?: AbortSignal): Promise<void>;
  /** Whole tokens available now (for metrics). */
  remaining(): Promise<number>;
}

/** Hands out one budget per API token (the HTTP client looks budgets up by a request's `budgetKey`). */
export interface BudgetRegistry {
  forKey(tokenOrKey: string): RequestBudget;
}
