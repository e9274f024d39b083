/**
 * What the sandbox counts of the requests it served, by a bounded label of their endpoint.
 */
import { LEGACY_OBJECTS } from './types.ts';

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

/** Statistics key of a request: method plus path with ids replaced (`GET /organizations/:org/users`). */
const OBJECTS = new Set<string>(LEGACY_OBJECTS);

export function endpointLabel(method: string, path: string): string {
  const segments = path.split('/').filter(Boolean);
  const legacy = segments[0] === 'v1';
  const out = segments.map((segment, i) => {
    const prev = segments[i - 1];
    const ext = segment.endsWith('.json') ? '.json' : '';
    if (prev === 'organizations') return `:org${ext}`;
    if (prev === 'users') return `:uid${ext}`;
    if (prev === 'streams') return ':id';
    if (legacy && prev !== undefined && OBJECTS.has(prev) && segment !== 'latest.json') return `:id${ext}`;
    return segment;
  });
  return `${method} /${out.join('/')}`;
}
