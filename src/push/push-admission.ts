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
 * The provider's push authentication (PLATFORM-FACTS.md, "Enterprise push notifications"):
 * `X-Validic-Signature` = Base64(HMAC-SHA1(key = application secret, message = organization access
 * token + service name + `X-Validic-Timestamp`)), no separators.
 *
 * The provider's push authentication (PLATFORM-FACTS.md, "Enterprise push notifications"):
 * `X-Validic-Signature` = Base64(HMAC-SHA1(key = application secret, message = organization access token +
 * service name + `X-Validic-Timestamp`)), no separators. The worked example uses the service name
 * `notification`, the parameter table `notifications`: both are accepted. The signature does not cover the
 * body, so the timestamp's age is bounded to limit replays. node:crypto does the HMAC and the constant-time
 * comparison: nothing here is hand-rolled cryptography.
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

/**
 * Whether `given` is the signature of `timestamp` for this secret and token, under either service name.
 * Both names are always computed and compared, and compared in constant time over equal-length buffers
 * (an HMAC-SHA1 is 20 bytes; a `given` of another length fails without a byte comparison that could leak).
 */
export function pushSignatureMatches(input: {
  applicationSecret: string;
  accessToken: string;
  timestamp: string;
  given: string;
}): boolean {
  const given = Buffer.from(input.given.trim(), 'base64');
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

export type SignedPushCheck =
  | { ok: true; orgId: string }
  | { ok: false; reason: 'missing timestamp' | 'unreadable timestamp' | 'stale timestamp' | 'bad signature' };

export interface SigningOrg {
  orgId: string;
  applicationSecret: string;
  /** The organization's v1 access token (`legacyToken`). */
  accessToken: string;
}

/**
 * Checks a signed push against every organization with an application secret; the one whose secret
 * and token reproduce the signature is the organization the notification belongs to. The timestamp
 * must lie within `maxAgeMs` of `now`, in the past or (clock skew) in the future.
 */
export function checkSignedPush(input: {
  signature: string;
  timestamp: string | undefined;
  orgs: readonly SigningOrg[];
  now: number;
  maxAgeMs: number;
}): SignedPushCheck {
  if (!input.timestamp?.trim()) return { ok: false, reason: 'missing timestamp' };
  const at = parsePushTimestamp(input.timestamp);
  if (at === undefined) return { ok: false, reason: 'unreadable timestamp' };
  if (Math.abs(input.now - at) > input.maxAgeMs) return { ok: false, reason: 'stale timestamp' };
  // Every org is tried (no early exit), so the time taken does not tell which secret matched.
  let orgId: string | undefined;
  for (const org of input.orgs) {
    const match = pushSignatureMatches({
      applicationSecret: org.applicationSecret,
      accessToken: org.accessToken,
      timestamp: input.timestamp.trim(),
      given: input.signature,
    });
    if (match) orgId ??= org.orgId;
  }
  return orgId ? { ok: true, orgId } : { ok: false, reason: 'bad signature' };
}

/**
 * Notifications accepted per organization per minute (`push.ratePerMinute`): a fixed one-minute window
 * counter, in Redis when the worker has it (so a fleet behind one push URL shares the limit), else in
 * this process. Hand-written rather than the request budget (src/budget/request-budget.ts): that one
 * WAITS for a token, while a push over the limit must be refused at once (429): it is the cap that
 * protects the service, and a counter per minute is two Redis commands. The count of refusals tells the
 * caller which refusal of the minute this is (the first, and every 100th, are recorded).
 */

/** The part of an ioredis client used here. */
export interface RateRedis {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface RateTake {
  /** Within the minute's limit. */
  allowed: boolean;
  /** Refusals this minute so far, this one included (0 when allowed). */
  refused: number;
}

export interface PushRateLimit {
  /** Counts one notification for `key`: whether the minute's limit admits it. */
  take(key: string): Promise<RateTake>;
}

// INCR and set the expiry on the first count, atomically.
const INCR_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;

export function createPushRateLimit(options: {
  perMinute: number;
  redis?: RateRedis;
  /** Redis key prefix, e.g. `validic-sync`. */
  prefix?: string;
  now?: () => number;
}): PushRateLimit {
  const now = options.now ?? Date.now;
  const minuteOf = () => Math.floor(now() / 60_000);
  const verdict = (count: number): RateTake => ({
    allowed: count <= options.perMinute,
    refused: Math.max(0, count - options.perMinute),
  });
  if (options.redis) {
    const redis = options.redis;
    const prefix = options.prefix ?? 'validic-sync';
    return {
      async take(key) {
        const redisKey = `${prefix}:push-rate:${encodeURIComponent(key)}:${minuteOf()}`;
        return verdict(Number(await redis.eval(INCR_SCRIPT, 1, redisKey, 120_000)));
      },
    };
  }
  const counts = new Map<string, number>();
  let minute = minuteOf();
  return {
    async take(key) {
      const current = minuteOf();
      if (current !== minute) {
        counts.clear();
        minute = current;
      }
      const count = (counts.get(key) ?? 0) + 1;
      counts.set(key, count);
      return verdict(count);
    },
  };
}
