/**
 * The shared secret guarding the push endpoint. The platform POSTs to a URL the customer registers, so
 * the secret may ride in that URL (`?secret=`) or, where the sender can set headers, in
 * `X-Validic-Sync-Secret` (or `Authorization: Bearer …`). Compared in constant time over SHA-256 digests
 * (equal lengths whatever was sent, so neither content nor length leaks through timing).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export const PUSH_SECRET_HEADER = 'x-validic-sync-secret';

type Headers = Record<string, string | string[] | undefined>;

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** The secret the request presents, if any (header first, then `?secret=`). */
export function presentedPushSecret(headers: Headers, url: string): string | undefined {
  const header = first(headers[PUSH_SECRET_HEADER]);
  if (header) return header;
  const bearer = /^Bearer\s+(.+)$/i.exec(first(headers.authorization) ?? '');
  if (bearer?.[1]) return bearer[1].trim();
  try {
    return new URL(url, 'http://relative.invalid/').searchParams.get('secret') ?? undefined;
  } catch {
    return undefined;
  }
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function pushSecretMatches(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(expected), digest(given));
}
