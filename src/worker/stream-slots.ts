/**
 * Stream connection slots shared by the fleet. The platform allows at most 3 concurrent connections per
 * stream (a 4th gets 422), and every `worker` process may want to consume the same org stream. A slot is
 * a Redis key `<prefix>:stream-slot:<org>:<stream>:<n>` (n < max) set with NX and a TTL, holding the
 * owner's id; the owner renews it every third of the TTL. A process that dies stops renewing, the key
 * expires and another process takes the slot over. A holder that cannot renew in time (Redis gone,
 * process paused) aborts its lease's signal, so it drops its connection before someone else may open one.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import { abortableSleep } from '../time/clock.ts';
import { MAX_STREAM_CONNECTIONS } from '../validic/platform-limits.ts';
import { RELEASE_LEASE, RENEW_LEASE } from './redis-lease.ts';

/** One held slot. Close the stream connection when `signal` aborts (the slot was lost), then release. */
export interface StreamSlotLease {
  slot: number;
  /** Aborted when the lease could not be renewed in time, or after release. */
  signal: AbortSignal;
  release(): Promise<void>;
}

/**
 * The hook a stream consumer calls around each connection: acquire before opening, release after
 * closing. Resolves with a lease once a slot is free; rejects when `signal` aborts first.
 */
export interface StreamSlotHook {
  acquire(signal: AbortSignal): Promise<StreamSlotLease>;
}

export interface StreamSlotsOptions {
  redis: Redis;
  /** Redis key prefix (config `redisPrefix`). */
  prefix: string;
  ttlMs?: number;
  /** How often a waiting process looks for a free slot; default a third of the TTL. */
  pollMs?: number;
  log?: Logger;
}

export interface StreamSlots {
  /** Takes a free slot now, or undefined when all `max` are held. */
  tryAcquire(orgId: string, streamName: string, max: number): Promise<StreamSlotLease | undefined>;
  /** Waits for a free slot. */
  acquire(orgId: string, streamName: string, max: number, signal: AbortSignal): Promise<StreamSlotLease>;
  /** The hook for one org stream, to hand to the stream consumer. */
  hook(orgId: string, streamName: string, max: number): StreamSlotHook;
  /** Slots currently held fleet-wide: slot number → owner id. */
  holders(orgId: string, streamName: string): Promise<Record<number, string>>;
  /** This process's owner id (stored in the slot keys). */
  readonly owner: string;
  /** Releases every lease this process holds. */
  releaseAll(): Promise<void>;
}

export function streamSlotKey(prefix: string, orgId: string, streamName: string, slot: number): string {
  return `${prefix}:stream-slot:${encodeURIComponent(orgId)}:${encodeURIComponent(streamName)}:${slot}`;
}

export function createStreamSlots(options: StreamSlotsOptions): StreamSlots {
  const { redis, prefix } = options;
  const ttlMs = options.ttlMs ?? 15_000;
  const renewEveryMs = Math.max(200, Math.floor(ttlMs / 3));
  const pollMs = options.pollMs ?? renewEveryMs;
  const owner = `${process.pid}-${randomUUID()}`;
  const leases = new Set<StreamSlotLease>();

  const tryAcquire = async (
    orgId: string,
    streamName: string,
    max: number,
  ): Promise<StreamSlotLease | undefined> => {
    const limit = Math.min(Math.max(1, max), MAX_STREAM_CONNECTIONS);
    for (let slot = 0; slot < limit; slot++) {
      const key = streamSlotKey(prefix, orgId, streamName, slot);
      const taken = await redis.set(key, owner, 'PX', ttlMs, 'NX');
      if (taken === 'OK') return startLease(key, slot);
    }
    return undefined;
  };

  const startLease = (key: string, slot: number): StreamSlotLease => {
    const controller = new AbortController();
    let renewedAt = Date.now();
    let released = false;
    const lose = (reason: string) => {
      if (controller.signal.aborted) return;
      options.log?.warn({ slot, reason }, 'stream slot lost; closing its connection');
      controller.abort(new Error(`stream slot lost: ${reason}`));
    };
    const timer = setInterval(() => {
      // Two renewals missed: give the slot up a whole renewal period before its key can expire, whether
      // or not Redis answers, so two connections never hold one slot.
      if (Date.now() - renewedAt > ttlMs / 2) lose('not renewed in time');
      if (controller.signal.aborted) {
        clearInterval(timer);
        return;
      }
      redis
        .eval(RENEW_LEASE, 1, key, owner, String(ttlMs))
        .then((result) => {
          if (Number(result) === 1) renewedAt = Date.now();
          else lose('taken over by another process');
        })
        .catch(() => {
          // Redis away: keep trying until the deadline above passes.
        });
    }, renewEveryMs);
    timer.unref();
    const lease: StreamSlotLease = {
      slot,
      signal: controller.signal,
      async release() {
        if (released) return;
        released = true;
        clearInterval(timer);
        leases.delete(lease);
        if (!controller.signal.aborted) controller.abort(new Error('stream slot released'));
        await redis.eval(RELEASE_LEASE, 1, key, owner).catch(() => {
          // The key expires by itself.
        });
      },
    };
    leases.add(lease);
    return lease;
  };

  const acquire = async (
    orgId: string,
    streamName: string,
    max: number,
    signal: AbortSignal,
  ): Promise<StreamSlotLease> => {
    for (;;) {
      signal.throwIfAborted();
      try {
        const lease = await tryAcquire(orgId, streamName, max);
        if (lease) return lease;
      } catch (error) {
        options.log?.warn({ err: error }, 'cannot reach Redis for a stream slot; waiting');
      }
      await abortableSleep(pollMs, signal);
    }
  };

  return {
    owner,
    tryAcquire,
    acquire,
    hook: (orgId, streamName, max) => ({
      acquire: (signal) => acquire(orgId, streamName, max, signal),
    }),
    async holders(orgId, streamName) {
      const out: Record<number, string> = {};
      for (let slot = 0; slot < MAX_STREAM_CONNECTIONS; slot++) {
        const value = await redis.get(streamSlotKey(prefix, orgId, streamName, slot));
        if (value) out[slot] = value;
      }
      return out;
    },
    async releaseAll() {
      await Promise.all([...leases].map((lease) => lease.release()));
    },
  };
}
