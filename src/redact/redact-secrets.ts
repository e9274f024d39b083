/**
 * Secrets ride in URLs on this platform (`?token=` on v2, `access_token=` on v1), and a connection
 * string carries its password (`postgres://user:password@host`, `?password=`), so every string that may
 * hold a URL is passed through here before it is logged, stored, thrown or used as a label.
 *
 * Redaction replaces a secret where it sits (the password field of a URL, a secret parameter, a JSON
 * field or a header value), never every occurrence of a word: with the database password `postgres`,
 * `postgres://postgres:postgres@host/db` becomes `postgres://postgres:[REDACTED]@host/db`, and the word
 * stays readable elsewhere (README "Why positions").
 */

/** Query parameters (and JSON fields, object keys) whose values are secrets. */
export const SECRET_PARAMS = [
  'token',
  'access_token',
  'api_key',
  'authentication_token',
  'secret',
  'application_secret',
  'applicationsecret',
  // Connection strings: `postgres://host/db?password=…`, libpq's `password=… host=…`.
  'password',
  'passwd',
  'sslpassword',
];

/** Headers (and object keys) whose values are credentials. */
export const SECRET_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-validic-sync-secret',
  'x-validic-signature',
];

const SECRET_PARAM_PATTERN = new RegExp(`([?&;]|\\b)(${SECRET_PARAMS.join('|')})=([^&#\\s"'<>]*)`, 'gi');
/** JSON bodies (e.g. v1 POST bodies) carry tokens as `"access_token": "..."`. */
const SECRET_JSON_PATTERN = new RegExp(`"(${SECRET_PARAMS.join('|')})"\\s*:\\s*"[^"]*"`, 'gi');
/**
 * The password field of a URL, `scheme://user:password@`: the user stays (it names who connects), the
 * password goes. A password holding `@`, `/`, `?` or `#` must be percent-encoded in a URL, so it ends
 * at the first of them.
 */
const URL_PASSWORD_PATTERN = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/?#@:"'<>]*):([^\s/?#@"'<>]+)@/gi;
/** `Authorization: Bearer x`, `"x-validic-sync-secret":"x"`: the value, after an optional scheme. */
const SECRET_HEADER_PATTERN = new RegExp(
  `\\b(${SECRET_HEADERS.join('|')})(["']?\\s*[:=]\\s*["']?)((?:bearer|basic|token|digest)\\s+)?(?!(?:bearer|basic|token|digest)\\b)([^\\s"',;<>]+)`,
  'gi',
);

export const REDACTED = '[REDACTED]';

/**
 * Replaces every secret in `text` at its position: URL passwords, secret query parameters, JSON secret
 * fields and header values.
 */
export function redactSecrets(text: string): string {
  return text
    .replace(URL_PASSWORD_PATTERN, (_m, head: string) => `${head}:${REDACTED}@`)
    .replace(SECRET_PARAM_PATTERN, (_m, lead: string, name: string) => `${lead}${name}=${REDACTED}`)
    .replace(SECRET_JSON_PATTERN, (_m, name: string) => `"${name}":"${REDACTED}"`)
    .replace(
      SECRET_HEADER_PATTERN,
      (_m, name: string, separator: string, scheme: string | undefined) =>
        `${name}${separator}${scheme ?? ''}${REDACTED}`,
    );
}

/** Redacts a URL (string or URL object) for display. */
export function redactUrl(url: string | URL): string {
  return redactSecrets(typeof url === 'string' ? url : url.href);
}

/**
 * Credentials that cannot be a word (the platform's tokens and application secret, issued as long random
 * strings; the admin token and push secret, at least 16 characters) are also masked verbatim wherever
 * they appear, e.g. a token the platform echoes in an error body or a path. A database or Redis password
 * is not registered: a person may choose an ordinary word (`postgres`), and masking every occurrence
 * would both garble messages and tell the reader which word the password is; it is redacted at its
 * positions above. Register at start-up.
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

const SECRET_KEYS = new Set([...SECRET_PARAMS, ...SECRET_HEADERS]);

function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

/** Deep-redacts any JSON-like value (used for log objects and stored error details). */
export function redactValue<T>(value: T): T {
  if (typeof value === 'string') return redactKnownSecrets(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactValue(v)) as T;
  if (value instanceof Error) {
    // Error fields are not enumerable: copy the useful ones so they survive (redacted) serialization.
    const out: Record<string, unknown> = { type: value.name, message: redactKnownSecrets(value.message) };
    if (value.stack) out.stack = redactKnownSecrets(value.stack);
    for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) ? REDACTED : redactValue(v);
    return out as T;
  }
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      out[k] = isSecretKey(k) ? REDACTED : redactValue(v);
    }
    return out as T;
  }
  return value;
}
