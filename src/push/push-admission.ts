/**
 * Who may push, before a body is read: whether push is configured, the organization a request is for,
 * the provider's signature or our shared secret, and the per-source rate limit.
 */

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config/schema.ts';

/**
 * Whether push is configured, i.e. whether the worker opens its push listener at all: the one place that
 * decides it, so a new way to authenticate push requests (e.g. an application secret for signatures)
 * only has to be added here. Without any, no port is opened: an endpoint that would answer nothing but
 * 404 has no reason to face the internet.
 */
export function pushConfigured(config: Pick<Config, 'http' | 'organizations'>): boolean {
  return (
    Boolean(config.http.pushSecret) || config.organizations.some((org) => Boolean(org.applicationSecret))
  );
}

/**
 * Which configured organization a push item belongs to: the one whose legacy org id (or org id) the
 * item names; with no org named, the only configured organization. Undefined when it cannot be told.
 */
export type ResolvePushOrg = (organizationId: string | undefined) => string | undefined;

export function pushOrgResolver(config: {
  organizations: readonly Pick<Config['organizations'][number], 'orgId' | 'legacyOrgId'>[];
}): ResolvePushOrg {
  const byId = new Map<string, string>();
  for (const org of config.organizations) byId.set(org.orgId, org.orgId);
  // The legacy id wins over a v2 id of another org: push notifications come from the v1 platform.
  for (const org of config.organizations) byId.set(org.legacyOrgId ?? org.orgId, org.orgId);
  const only = config.organizations.length === 1 ? config.organizations[0]!.orgId : undefined;
  return (organizationId) => (organizationId ? byId.get(organizationId) : only);
}

/**
 * The shared secret (`PUSH_SECRET`) guarding the push endpoint, for senders that cannot sign (a relay of
 * our own, a test client). It is accepted ONLY in a header, `X-Validic-Sync-Secret` or
 * `Authorization: Bearer …`: a secret in the query string would sit in every proxy and access log, so
 * a request carrying one there is refused outright (see `secretInQuery`). Compared in constant time by
 * `secretsEqual` (src/runtime/secrets-equal.ts).
 */
export const PUSH_SECRET_HEADER = 'x-validic-sync-secret';

type Headers = Record<string, string | string[] | undefined>;

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** The secret the request presents in a header, if any. */
export function presentedPushSecret(headers: Headers): string | undefined {
  const header = first(headers[PUSH_SECRET_HEADER]);
  if (header) return header;
  const bearer = /^Bearer\s+(.+)$/i.exec(first(headers.authorization) ?? '');
  return bearer?.[1]?.trim() || undefined;
}

/** Whether the request target carries a `secret` query parameter, in any case (refused, whatever its value). */
export function secretInQuery(url: string): boolean {
  try {
    const names = new URL(url, 'http://relative.invalid/').searchParams.keys();
    return [...names].some((name) => name.toLowerCase() === 'secret');
  } catch {
    return false;
  }
}

/**
 * The provider's push authentication: `X-Validic-Signature` = Base64(HMAC-SHA1(key = application secret,
 * message = organization access token + service name + `X-Validic-Timestamp`)), no separators. The
 * provider's worked example uses the service name `notification`, its parameter table `notifications`:
 * both are accepted. node:crypto does the HMAC and the constant-time comparison: nothing here is
 * hand-rolled cryptography.
 *
 * The signature does not cover the body, so a captured one could carry any body: it is accepted once
 * (the replay cache below, keyed by its decoded bytes, so no other spelling of the same bytes passes),
 * only while its timestamp lies within the maximum age of our clock either way (a future timestamp is
 * bounded as tightly as a past one), and only in strict base64: the canonical padded form of 20 bytes,
 * nothing URL-safe, unpadded, non-canonical or trailing.
 *
 * Timestamp formats accepted (the provider's example is `2015-12-08T16:04:18029095657000`: seconds
 * followed by a fraction with no dot and no zone, read as UTC), plus ISO-8601 (with `Z`, an offset, or
 * no zone = UTC) and a plain epoch value (seconds; 13 digits or more are read as milliseconds), since the
 * documentation shows one example and names no format.
 */
export const SIGNATURE_HEADER = 'x-validic-signature';
export const TIMESTAMP_HEADER = 'x-validic-timestamp';
export const SERVICE_NAMES = ['notification', 'notifications'] as const;
export const DEFAULT_SIGNATURE_MAX_AGE_MS = 5 * 60_000;

/** The signature the provider sends for these inputs (also what the sandbox sends). */
export function pushSignature(input: {
  applicationSecret: string;
  accessToken: string;
  timestamp: string;
  serviceName?: string;
}): string {
  return createHmac('sha1', input.applicationSecret)
    .update(`${input.accessToken}${input.serviceName ?? SERVICE_NAMES[0]}${input.timestamp}`, 'utf8')
    .digest('base64');
}

const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The bytes of a strict base64 text, or undefined: only the standard alphabet, padded, nothing after the
 * padding, and canonical (the unused bits of the last character zero, so one byte string has exactly
 * one spelling). Node's own decoder skips what it does not understand, which is why it is not enough.
 */
export function decodeStrictBase64(text: string): Buffer | undefined {
  if (!STRICT_BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

/**
 * Whether `given` is the signature of `timestamp` for this secret and token, under either service name.
 * Both names are always computed and compared, and compared in constant time over equal-length buffers
 * (an HMAC-SHA1 is 20 bytes; a `given` that is not strict base64 of 20 bytes fails without a byte
 * comparison that could leak).
 */
export function pushSignatureMatches(input: {
  applicationSecret: string;
  accessToken: string;
  timestamp: string;
  given: string;
}): boolean {
  const given = decodeStrictBase64(input.given) ?? Buffer.alloc(0);
  let match = false;
  for (const serviceName of SERVICE_NAMES) {
    const expected = Buffer.from(pushSignature({ ...input, serviceName }), 'base64');
    const same = given.length === expected.length && timingSafeEqual(given, expected);
    match = match || same;
  }
  return match;
}

const PROVIDER_FORM = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\d*)$/;
const ISO_FORM = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const EPOCH_FORM = /^\d{9,16}(\.\d+)?$/;

/** Epoch milliseconds of an `X-Validic-Timestamp` value, or undefined when it is none of the forms. */
export function parsePushTimestamp(value: string | undefined): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  const provider = PROVIDER_FORM.exec(text);
  if (provider) {
    const seconds = Date.parse(`${provider[1]}Z`);
    const fraction = provider[2] ? Number(`0.${provider[2]}`) : 0;
    return Number.isNaN(seconds) ? undefined : seconds + Math.floor(fraction * 1000);
  }
  if (ISO_FORM.test(text)) {
    const zoned = /(Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text}Z`;
    const ms = Date.parse(zoned.replace(' ', 'T').replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
    return Number.isNaN(ms) ? undefined : ms;
  }
  if (EPOCH_FORM.test(text)) {
    const n = Number(text);
    return text.split('.')[0]!.length >= 13 ? Math.floor(n) : Math.floor(n * 1000);
  }
  return undefined;
}

/**
 * The outcome of a signed push's check. A refusal for its timestamp comes with the org whose signature
 * verified: the provider sent it (a clock apart, or a form we cannot read), so its refusal is counted
 * for that org (src/push/handle-push.ts, "Refusals").
 */
export type SignedPushCheck =
  | {
      ok: true;
      orgId: string;
      /** The signature's decoded bytes: the replay cache's key. */
      signature: Buffer;
      /** The timestamp (ms), within `maxAgeMs` of `now`. */
      at: number;
    }
  | { ok: false; reason: 'missing timestamp' | 'bad signature' }
  | { ok: false; reason: 'unreadable timestamp' | 'stale timestamp'; orgId: string };

export interface SigningOrg {
  orgId: string;
  applicationSecret: string;
  /** The organization's v1 access token (`legacyToken`). */
  accessToken: string;
}

/**
 * Checks a signed push against every organization with an application secret; the one whose secret
 * and token reproduce the signature is the organization the notification belongs to. The signature is
 * checked first (it covers the timestamp's text as sent), then the timestamp must lie within `maxAgeMs`
 * of `now` (the platform's clock, when the caller has it), in the past or in the future alike.
 */
export function checkSignedPush(input: {
  signature: string;
  timestamp: string | undefined;
  orgs: readonly SigningOrg[];
  now: number;
  maxAgeMs: number;
}): SignedPushCheck {
  const timestamp = input.timestamp?.trim();
  if (!timestamp) return { ok: false, reason: 'missing timestamp' };
  // Every org is tried (no early exit), so the time taken does not tell which secret matched.
  let orgId: string | undefined;
  for (const org of input.orgs) {
    const match = pushSignatureMatches({
      applicationSecret: org.applicationSecret,
      accessToken: org.accessToken,
      timestamp,
      given: input.signature,
    });
    if (match) orgId ??= org.orgId;
  }
  if (!orgId) return { ok: false, reason: 'bad signature' };
  const at = parsePushTimestamp(timestamp);
  if (at === undefined) return { ok: false, reason: 'unreadable timestamp', orgId };
  if (Math.abs(input.now - at) > input.maxAgeMs) return { ok: false, reason: 'stale timestamp', orgId };
  return { ok: true, orgId, signature: decodeStrictBase64(input.signature)!, at };
}

/**
 * Signatures already used (`claim` is true the first time only), so a captured one cannot carry another
 * body: in Redis when the worker has it (a fleet behind one push URL shares it: SET NX with an expiry),
 * else in this process. Keyed by the signature's decoded bytes, kept for as long as any timestamp it
 * could carry is accepted (twice the maximum age: from `maxAge` before the timestamp to `maxAge` after).
 * A signature whose notification could not be stored is released, so the provider's retry of it (if it
 * retries) is not taken for a replay.
 */
export interface PushReplayCache {
  /** True when this is the signature's first use (now marked used for `ttlMs`). */
  claim(signature: Buffer, ttlMs: number): Promise<boolean>;
  /** Forgets a signature (its notification was not stored). */
  release(signature: Buffer): Promise<void>;
}

/** The part of an ioredis client the replay cache uses. */
export interface ReplayRedis {
  set(key: string, value: string, px: 'PX', ttlMs: number, nx: 'NX'): Promise<'OK' | null>;
  del(key: string): Promise<number>;
}

export function createPushReplayCache(options: {
  redis?: ReplayRedis;
  /** Redis key prefix, e.g. `validic-sync`. */
  prefix?: string;
  now?: () => number;
}): PushReplayCache {
  const now = options.now ?? Date.now;
  if (options.redis) {
    const redis = options.redis;
    const keyOf = (signature: Buffer) =>
      `${options.prefix ?? 'validic-sync'}:push-signature:${signature.toString('hex')}`;
    return {
      async claim(signature, ttlMs) {
        return (await redis.set(keyOf(signature), '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
      },
      async release(signature) {
        await redis.del(keyOf(signature));
      },
    };
  }
  const used = new Map<string, number>();
  return {
    async claim(signature, ttlMs) {
      const at = now();
      // Expired entries go as new ones come (in insertion order, which is expiry order for one ttl), so
      // the map holds at most what the rate admits per ttl.
      for (const [key, until] of used) {
        if (until > at) break;
        used.delete(key);
      }
      const key = signature.toString('hex');
      if (used.has(key)) return false;
      used.set(key, at + ttlMs);
      return true;
    },
    async release(signature) {
      used.delete(signature.toString('hex'));
    },
  };
}

/**
 * Notifications accepted per organization per minute (`push.ratePerMinute`), and refusals of any kind
 * per minute: fixed one-minute window counters, in Redis when the worker has it (so a fleet behind one
 * push URL shares them), else in this process. Hand-written rather than the request budget
 * (src/budget/request-budget.ts): that one WAITS for a token, while a push over the limit must be
 * refused at once (429): it is the cap that protects the service, and a counter per minute is one Redis
 * command. The refusal count tells the caller which refusal of the minute this is (the first, and every
 * 100th, are recorded: src/push/handle-push.ts, "Refusals").
 */

/** The part of an ioredis client used here. */
export interface RateRedis {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface RateTake {
  /** Within the minute's limit. */
  allowed: boolean;
}

export interface PushRateLimit {
  /** Counts one notification for `key`: whether the minute's limit admits it. */
  take(key: string): Promise<RateTake>;
}

export interface PushRefusalCounter {
  /** Counts one refusal for `key`: the refusals of this minute so far, fleet-wide, this one included. */
  count(key: string): Promise<number>;
}

// INCR and set the expiry on the first count, atomically.
const INCR_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;

interface MinuteCounterOptions {
  redis?: RateRedis;
  /** Redis key prefix, e.g. `validic-sync`. */
  prefix?: string;
  now?: () => number;
}

/** Counts per key and minute: INCR in Redis, or a map in this process. */
function minuteCounter(
  name: string,
  options: MinuteCounterOptions,
): { inRedis?: (key: string) => Promise<number>; inProcess: (key: string) => number } {
  const now = options.now ?? Date.now;
  const minuteOf = () => Math.floor(now() / 60_000);
  const counts = new Map<string, number>();
  let minute = minuteOf();
  const inProcess = (key: string) => {
    const current = minuteOf();
    if (current !== minute) {
      counts.clear();
      minute = current;
    }
    const count = (counts.get(key) ?? 0) + 1;
    counts.set(key, count);
    return count;
  };
  const { redis } = options;
  if (!redis) return { inProcess };
  const prefix = options.prefix ?? 'validic-sync';
  return {
    inProcess,
    inRedis: async (key) =>
      Number(
        await redis.eval(
          INCR_SCRIPT,
          1,
          `${prefix}:${name}:${encodeURIComponent(key)}:${minuteOf()}`,
          120_000,
        ),
      ),
  };
}

export function createPushRateLimit(options: MinuteCounterOptions & { perMinute: number }): PushRateLimit {
  const counter = minuteCounter('push-rate', options);
  return {
    async take(key) {
      const count = counter.inRedis ? await counter.inRedis(key) : counter.inProcess(key);
      return { allowed: count <= options.perMinute };
    },
  };
}

/**
 * Refusals per key and minute. Without Redis (or while it does not answer) counted in this process: a
 * refusal is never left uncounted, and a flood of them during an outage still writes its minute only at
 * the first and every 100th.
 */
export function createPushRefusalCounter(options: MinuteCounterOptions): PushRefusalCounter {
  const counter = minuteCounter('push-refused', options);
  return {
    async count(key) {
      if (!counter.inRedis) return counter.inProcess(key);
      try {
        return await counter.inRedis(key);
      } catch {
        return counter.inProcess(key);
      }
    },
  };
}
