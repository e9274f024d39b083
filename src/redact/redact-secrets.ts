/**
 * Secrets ride in URLs on this platform (`?token=` on v2, `access_token=` on v1), so every string
 * that may hold a URL is passed through here before it is logged, stored, thrown or used as a label.
 */

/** Query parameters whose values are secrets. */
export const SECRET_PARAMS = [
  'token',
  'access_token',
  'api_key',
  'authentication_token',
  'secret',
  'application_secret',
  'applicationsecret',
];

const SECRET_PARAM_PATTERN = new RegExp(`([?&;]|\\b)(${SECRET_PARAMS.join('|')})=([^&#\\s"'<>]*)`, 'gi');
/** JSON bodies (e.g. v1 POST bodies) carry tokens as `"access_token": "..."`. */
const SECRET_JSON_PATTERN = new RegExp(`"(${SECRET_PARAMS.join('|')})"\\s*:\\s*"[^"]*"`, 'gi');

export const REDACTED = '[REDACTED]';

/** Replaces every secret query-parameter value (and JSON secret field) in `text`. */
export function redactSecrets(text: string): string {
  return text
    .replace(SECRET_PARAM_PATTERN, (_m, lead: string, name: string) => `${lead}${name}=${REDACTED}`)
    .replace(SECRET_JSON_PATTERN, (_m, name: string) => `"${name}":"${REDACTED}"`);
}

/** Redacts a URL (string or URL object) for display. */
export function redactUrl(url: string | URL): string {
  return redactSecrets(typeof url === 'string' ? url : url.href);
}

/**
 * Known secret values (tokens from config) are also masked verbatim wherever they appear, e.g. a
 * token echoed inside an error body or a path. Register them once at start-up.
 */
const knownSecrets = new Set<string>();

export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 4) knownSecrets.add(value);
}

export function redactKnownSecrets(text: string): string {
  let out = redactSecrets(text);
  for (const secret of knownSecrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** An error's message for reasons and log lines, redacted: HTTP errors may quote a URL with its token. */
export function redactedMessage(error: unknown): string {
  return redactKnownSecrets(error instanceof Error ? error.message : String(error));
}

/** Deep-redacts any JSON-like value (used for log objects and stored error details). */
export function redactValue<T>(value: T): T {
  if (typeof value === 'string') return redactKnownSecrets(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactValue(v)) as T;
  if (value instanceof Error) {
    // Error fields are not enumerable: copy the useful ones so they survive (redacted) serialization.
    const out: Record<string, unknown> = { type: value.name, message: redactKnownSecrets(value.message) };
    if (value.stack) out.stack = redactKnownSecrets(value.stack);
    for (const [k, v] of Object.entries(value))
      out[k] = SECRET_PARAMS.includes(k.toLowerCase()) ? REDACTED : redactValue(v);
    return out as T;
  }
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = SECRET_PARAMS.includes(k.toLowerCase()) ? REDACTED : redactValue(v);
    }
    return out as T;
  }
  return value;
}
