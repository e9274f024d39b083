/**
 * The provider's push authentication (PLATFORM-FACTS.md, "Enterprise push notifications"):
 * `X-Validic-Signature` = Base64(HMAC-SHA1(key = application secret, message = organization access
 * token + service name + `X-Validic-Timestamp`)), no separators.
 * Why and how: README.md, "`push-signature.ts`".
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

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
