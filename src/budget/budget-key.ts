/**
 * Budgets are per token, but a token must never be stored or shown: the key is a hash of it. SHA-256
 * truncated to 16 hex chars is enough to keep tokens apart and reveals nothing usable.
 */
import { createHash } from 'node:crypto';

export function budgetKeyOf(token: string): string {
  return createHash('sha256').update(`validic-sync:budget:${token}`).digest('hex').slice(0, 16);
}
