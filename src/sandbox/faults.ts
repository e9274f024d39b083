/**
 * The faults the sandbox can be told to show (the control API), and the request budget whose 429s one of
 * them turns on. Every switch is off by default. Rates are probabilities per request (or per event)
 * drawn from a PRNG seeded from the sandbox seed and re-seeded whenever faults are set, so the same
 * sequence of requests meets the same faults.
 */
import { createPrng, type Prng } from './prng.ts';

export type LegacyPaging = 'offset' | 'page' | 'page-and-offset';

export interface Faults {
  /** Added delay before every platform request is answered, in ms. */
  latencyMs: number;
  /** Share of platform requests answered 429. */
  rate429: number;
  /** `Retry-After` seconds sent with fault 429s; null sends none (the platform does not promise it). */
  retryAfterSeconds: number | null;
  /** Share of platform requests answered with a 5xx. */
  rate5xx: number;
  /** Status used for 5xx faults. */
  status5xx: number;
  /** Share of JSON responses cut off: Content-Length is sent, half the body written, socket destroyed. */
  truncateRate: number;
  /** Only requests whose path contains one of these strings meet the per-request faults above. */
  paths: string[] | null;
  /** Drop a stream connection after every K data events sent on it. */
  streamDropEvery: number | null;
  /**
   * Drop a replay connection after every K data events sent on it. Apart from `streamDropEvery`: a replay
   * starts again from its date on every connect, so one dropped every K events never gets past the first
   * K, for any client.
   */
  replayDropEvery: number | null;
  /** The server ends a stream (or replay) connection cleanly after K data events sent on it. */
  streamCloseAfter: number | null;
  /** Stream and replay connections stay open but send nothing: no data, no pokes. */
  silentStream: boolean;
  /** After a stream connection ends, the next `rejections` connects within `windowMs` answer 422. */
  reconnectStorm: { rejections: number; windowMs: number } | null;
  /** Share of data events preceded by a frame with another event name (`rule`, `connection`). */
  unknownEventRate: number;
  /** Replay sends, after each changed record, the version it replaced again (an older version late). */
  replayOlderVersions: boolean;
  /**
   * A deleted record keeps the checksum of the version it deletes (the platform's checksum need not
   * cover `deleted_at`); off: the delete is a new checksum like any other change.
   */
  deleteKeepsChecksum: boolean;
  /** Legacy lists: after the last page `next` points back to the first page instead of null. */
  legacyNextWraps: boolean;
  /** Legacy latest endpoints cap `limit` at this value (the "200" description). */
  latestLimitCap: number | null;
  /**
   * How legacy lists page. `offset` (default): `offset` counts records (`page` only when no `offset` is
   * sent), links carry `offset`. `page`: `offset` is ignored, links carry `page` alone. `page-and-offset`:
   * both apply together (skip `offset` + (page − 1) × limit), links carry the next `page` and the
   * request's `offset`.
   */
  legacyPaging: LegacyPaging;
  /**
   * Legacy lists holding more than `after` records (of `objects`, or every object) are cut short:
   * `empty-page` serves empty pages past the cut while `next` goes on; `next-null` ends the links at the
   * cut. `summary.results` keeps the whole count either way.
   */
  legacyListingCutShort: {
    after: number;
    style: 'empty-page' | 'next-null';
    objects: string[] | null;
  } | null;
  /** The v2 users listing ends after this many users (`{}` past it) while `meta.total` keeps the whole count. */
  usersListingCutShort: number | null;
  /** Users pages come without `meta` (the provider's listing may not carry it). */
  usersListingWithoutMeta: boolean;
  /** The v2 users listing reduces `limit` to this (a smaller page than the 1,000 asked). */
  usersLimitCap: number | null;
  /**
   * Listings change between their pages, as a live platform's do. After each page of a legacy `latest`
   * listing that has more pages, `legacy` records of the listed window change (each drawn: updated, so
   * its `last_updated` moves to now and it leaves a window that ends before; or deleted), and a record is
   * added (stamped now); after each page of the v2 users listing that has more pages, `users` users are
   * deleted and as many added. Only the first `pages` such pages (since the switch was set) change it.
   */
  listingChurn: { legacy: number; users: number; pages: number } | null;
  /**
   * The platform's limit as a token bucket: `requestsPerHour` per token refilled continuously into a
   * burst of `burst`, on the sandbox clock; past it, 429 (with `Retry-After` when `retryAfter`).
   */
  grantedRate: { requestsPerHour: number; burst: number; retryAfter: boolean } | null;
  /** Request budget per token: `limit` requests per fixed window of `windowMs` (sandbox clock), then 429. */
  requestBudget: { limit: number; windowMs: number } | null;
  /**
   * Events re-sent to the next member after a stream disconnect; null: the `redeliverCount` option (0).
   * The platform promises no number ("redelivery after reconnects is expected"): 0 is the honest worst case.
   */
  redeliverCount: number | null;
}

export const DEFAULT_FAULTS: Faults = {
  latencyMs: 0,
  rate429: 0,
  retryAfterSeconds: null,
  rate5xx: 0,
  status5xx: 503,
  truncateRate: 0,
  paths: null,
  streamDropEvery: null,
  replayDropEvery: null,
  streamCloseAfter: null,
  silentStream: false,
  reconnectStorm: null,
  unknownEventRate: 0,
  replayOlderVersions: false,
  deleteKeepsChecksum: false,
  legacyNextWraps: false,
  latestLimitCap: null,
  legacyPaging: 'offset',
  legacyListingCutShort: null,
  usersListingCutShort: null,
  usersListingWithoutMeta: false,
  usersLimitCap: null,
  listingChurn: null,
  grantedRate: null,
  requestBudget: null,
  redeliverCount: null,
};

export class FaultSwitches {
  current: Faults;
  private prng: Prng;
  private readonly seed: number;
  /** Budget of the `requestBudget` switch; replaced whenever faults are set. */
  budget = new RequestBudget(null);
  /** The `grantedRate` switch's buckets; replaced whenever faults are set. */
  granted = new GrantedRate(null);
  /** Pages after which `listingChurn` changed a listing since the switch was set. */
  churnedPages = 0;

  constructor(seed: number, initial: Partial<Faults> = {}) {
    this.seed = seed;
    this.current = { ...DEFAULT_FAULTS, ...initial };
    this.prng = createPrng(seed ^ 0x5eed);
    this.budget = new RequestBudget(this.current.requestBudget);
    this.granted = new GrantedRate(this.current.grantedRate);
  }

  /** Merges switches; `reset: true` first returns every switch to its default. */
  set(faults: Partial<Faults>, reset = false): Faults {
    this.current = { ...(reset ? DEFAULT_FAULTS : this.current), ...faults };
    this.prng = createPrng(this.seed ^ 0x5eed);
    this.budget = new RequestBudget(this.current.requestBudget);
    this.granted = new GrantedRate(this.current.grantedRate);
    this.churnedPages = 0;
    return this.current;
  }

  /** A uniform draw in [0, 1) from the faults' PRNG (the churn's choices). */
  draw(): number {
    return this.prng.next();
  }

  appliesTo(path: string): boolean {
    const paths = this.current.paths;
    return !paths || paths.some((p) => path.includes(p));
  }

  roll(rate: number): boolean {
    return rate > 0 && (rate >= 1 || this.prng.next() < rate);
  }
}

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

/** The `grantedRate` switch: one token bucket per token, refilled on the sandbox clock. */
export class GrantedRate {
  private readonly rate: { requestsPerHour: number; burst: number } | null;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: { requestsPerHour: number; burst: number } | null) {
    this.rate = rate;
  }

  /** Spends one request; returns the ms until one is granted again when refused, else null. */
  spend(token: string, nowMs: number): number | null {
    if (!this.rate) return null;
    const perMs = this.rate.requestsPerHour / 3_600_000;
    const bucket = this.buckets.get(token) ?? { tokens: this.rate.burst, at: nowMs };
    bucket.tokens = Math.min(this.rate.burst, bucket.tokens + Math.max(0, nowMs - bucket.at) * perMs);
    bucket.at = Math.max(bucket.at, nowMs);
    this.buckets.set(token, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return null;
    }
    return Math.ceil((1 - bucket.tokens) / perMs);
  }
}
