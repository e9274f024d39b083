/** Request statistics: per endpoint and status, 429s, and requests per token per minute (sandbox clock). */
export interface StatsSnapshot {
  total: number;
  rateLimited: number;
  byEndpoint: Record<string, Record<string, number>>;
  /** token → minute (YYYY-MM-DDThh:mm) → requests. */
  perTokenMinute: Record<string, Record<string, number>>;
}

export class RequestStats {
  private total = 0;
  private rateLimited = 0;
  private byEndpoint = new Map<string, Map<number, number>>();
  private perTokenMinute = new Map<string, Map<string, number>>();

  record(endpoint: string, status: number, token: string | null, nowMs: number): void {
    this.total++;
    if (status === 429) this.rateLimited++;
    let statuses = this.byEndpoint.get(endpoint);
    if (!statuses) {
      statuses = new Map();
      this.byEndpoint.set(endpoint, statuses);
    }
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    if (token) {
      let minutes = this.perTokenMinute.get(token);
      if (!minutes) {
        minutes = new Map();
        this.perTokenMinute.set(token, minutes);
      }
      const minute = new Date(nowMs).toISOString().slice(0, 16);
      minutes.set(minute, (minutes.get(minute) ?? 0) + 1);
    }
  }

  reset(): void {
    this.total = 0;
    this.rateLimited = 0;
    this.byEndpoint = new Map();
    this.perTokenMinute = new Map();
  }

  snapshot(): StatsSnapshot {
    const nested = (m: Map<string | number, Map<string | number, number>>) =>
      Object.fromEntries(
        [...m].map(([k, v]) => [String(k), Object.fromEntries([...v].map(([a, b]) => [String(a), b]))]),
      );
    return {
      total: this.total,
      rateLimited: this.rateLimited,
      byEndpoint: nested(this.byEndpoint as Map<string | number, Map<string | number, number>>),
      perTokenMinute: nested(this.perTokenMinute as Map<string | number, Map<string | number, number>>),
    };
  }
}
