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
