/** Requests per token in fixed windows of the sandbox clock: the platform's rate limit and the budget fault. */
export class RequestBudget {
  private readonly limit: { limit: number; windowMs: number } | null;
  private readonly used = new Map<string, { window: number; count: number }>();

  constructor(limit: { limit: number; windowMs: number } | null) {
    this.limit = limit;
  }

  /** Counts one request; returns the ms until the window resets when the budget is exhausted, else null. */
  spend(token: string, nowMs: number): number | null {
    if (!this.limit) return null;
    const window = Math.floor(nowMs / this.limit.windowMs);
    const entry = this.used.get(token);
    if (!entry || entry.window !== window) {
      this.used.set(token, { window, count: 1 });
      return this.limit.limit >= 1 ? null : this.limit.windowMs;
    }
    entry.count++;
    return entry.count > this.limit.limit ? (window + 1) * this.limit.windowMs - nowMs : null;
  }
}
