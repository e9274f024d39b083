/**
 * Leases in Redis: a key set with NX and a TTL holds its owner's id; only the owner may renew
 * (compare-and-expire) or release (compare-and-delete) it, so a lapsed owner can never extend or
 * delete a lease someone else took over. Used by the stream slots and the fleet's metrics reporter.
 */
import type { Redis } from 'ioredis';

export const RENEW_LEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
export const RELEASE_LEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** Takes the lease if it is free, or renews it if `owner` holds it; true while `owner` holds it. */
export async function holdLease(redis: Redis, key: string, owner: string, ttlMs: number): Promise<boolean> {
  if ((await redis.set(key, owner, 'PX', ttlMs, 'NX')) === 'OK') return true;
  return (await redis.eval(RENEW_LEASE, 1, key, owner, String(ttlMs))) === 1;
}
