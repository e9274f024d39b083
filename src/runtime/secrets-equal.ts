/**
 * Compares a presented secret with the expected one in constant time. Both are hashed first (SHA-256),
 * so the comparison takes the same time whatever the lengths and leaks neither the secret's length nor
 * how much of it matched. Used for the push shared secret and the admin token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function secretsEqual(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(expected), digest(given));
}
