/**
 * The worker's streams: every configured org stream kept running in this process for as long as it
 * runs, on fleet-wide slots (Redis keys with a TTL and renewal), and the Redis lease both the slots and
 * the metrics reporter use. Streams are not queue jobs: a job holding a connection for hours would pin
 * a worker slot and fight BullMQ's lock renewal. Instead each process runs `runOrgStream` per org, whose
 * connections each take a slot first: at most `stream.connections` (≤ 3) connections per stream across
 * the fleet, and when a process dies its slot lapses and a waiting process takes over. A stream that
 * stops with an error is restarted after a back-off (capped at a minute).
 */

import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import type { WorkerMetrics } from '../metrics/worker-metrics.ts';
import type { CatalogPayloads } from '../queue/job-catalog.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { consumerOptionsFromConfig } from '../stream/consumer-options.ts';
import { runOrgStream } from '../stream/run-org-stream.ts';
import { abortableSleep } from '../time/clock.ts';
import { MAX_STREAM_CONNECTIONS } from '../validic/platform-limits.ts';
import type { Runtime } from './runtime.ts';

export interface StreamSupervisorOptions {
  runtime: Pick<Runtime, 'config' | 'warehouse' | 'org'>;
  slots: StreamSlots;
  jobQueue: Pick<JobQueue<CatalogPayloads>, 'enqueue'>;
  signal: AbortSignal;
  metrics?: WorkerMetrics;
  log: Logger;
}

export interface StreamSupervisor {
  /** Resolves once every org stream stopped (after `signal` aborted). */
  done: Promise<void>;
  /** Connection states by org and slot (`w<i>`: connection i waiting for a slot), for metrics. */
  states(): Record<string, Record<string, string>>;
}

export function superviseStreams(options: StreamSupervisorOptions): StreamSupervisor {
  const { runtime, signal, log } = options;
  const states: Record<string, Record<string, string>> = {};

  const superviseOrg = async (orgId: string): Promise<void> => {
    const org = runtime.org(orgId);
    const name = org.config.stream.name;
    const max = org.config.stream.connections;
    const orgStates: Record<string, string> = {};
    states[orgId] = orgStates;
    let failures = 0;
    while (!signal.aborted) {
      try {
        await runOrgStream({
          warehouse: runtime.warehouse,
          org,
          signal,
          consumerOptions: consumerOptionsFromConfig(runtime.config.stream),
          acquireSlot: async (index, slotSignal) => {
            orgStates[`w${index}`] = 'waiting_slot';
            const lease = await options.slots.acquire(orgId, name, max, slotSignal).finally(() => {
              delete orgStates[`w${index}`];
            });
            log.info({ orgId, slot: lease.slot }, 'holding a stream slot');
            return {
              slot: lease.slot,
              lost: lease.signal,
              release: async () => {
                delete orgStates[lease.slot];
                await lease.release();
              },
            };
          },
          enqueue: (jobName, payload) => options.jobQueue.enqueue(jobName, payload),
          // A gap brings the next reconciliation pass forward; the delay lets the primary catch up first.
          requestPass: () => {
            void options.jobQueue
              .enqueue(
                'streams.reconcile',
                { orgId, trigger: 'gap' },
                { delayMs: runtime.config.stream.passAfterGapSeconds * 1000 },
              )
              .catch((error: unknown) =>
                log.warn({ err: error, orgId }, 'could not queue a reconciliation pass'),
              );
          },
          hooks: {
            onStateChange: ({ slot, to }) => {
              orgStates[slot] = to;
            },
            onCommit: ({ result, committedAt, via }) => {
              options.metrics?.recordLoad(result.byType, result.newestCreatedAt, via, committedAt);
              options.metrics?.recordSuccess(orgId, 'stream', committedAt);
            },
          },
          log,
        });
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        failures++;
        const delayMs = Math.min(60_000, 1000 * 2 ** Math.min(failures, 6));
        log.error({ err: error, orgId, delayMs }, 'stream stopped; restarting after a pause');
        await abortableSleep(delayMs, signal).catch(() => {});
      }
    }
  };

  const done = Promise.all(
    runtime.config.organizations.map((org) =>
      superviseOrg(org.orgId).catch((error: unknown) =>
        log.error({ err: error }, 'stream supervisor failed'),
      ),
    ),
  ).then(() => undefined);
  return { done, states: () => structuredClone(states) };
}

/**
 * Stream connection slots shared by the fleet. The platform allows at most 3 concurrent connections per
 * stream (a 4th gets 422), and every `worker` process may want to consume the same org stream. A slot is
 * a Redis key `<prefix>:stream-slot:<org>:<stream>:<n>` (n < max) set with NX and a TTL, holding the
 * owner's id; the owner renews it every third of the TTL. A process that dies stops renewing, the key
 * expires and another process takes the slot over. A holder that cannot renew in time (Redis gone,
 * process paused) aborts its lease's signal, so it drops its connection before someone else may open one.
 */

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

/**
 * Leases in Redis: a key set with NX and a TTL holds its owner's id; only the owner may renew
 * (compare-and-expire) or release (compare-and-delete) it, so a lapsed owner can never extend or
 * delete a lease someone else took over. Used by the stream slots and the fleet's metrics reporter.
 */
export const RENEW_LEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
export const RELEASE_LEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** Takes the lease if it is free, or renews it if `owner` holds it; true while `owner` holds it. */
export async function holdLease(redis: Redis, key: string, owner: string, ttlMs: number): Promise<boolean> {
  if ((await redis.set(key, owner, 'PX', ttlMs, 'NX')) === 'OK') return true;
  return (await redis.eval(RENEW_LEASE, 1, key, owner, String(ttlMs))) === 1;
}
