/**
 * Connects to Redis with a bounded first attempt, so a wrong REDIS_URL is one clear error instead of an
 * endless reconnect loop. Once connected, ioredis reconnects by itself when Redis goes away and returns.
 */
import { Redis } from 'ioredis';
import { UserFacingError } from '../errors/index.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { backoffDelay } from '../time/backoff-delay.ts';

/** Per connection (and its duplicates, which share its retryStrategy): whether it still reconnects. */
const reconnecting = new WeakMap<Redis, { on: boolean }>();

export async function connectRedis(url: string, options: { timeoutMs?: number } = {}): Promise<Redis> {
  const policy = { on: true };
  const redis = new Redis(url, {
    lazyConnect: true,
    // BullMQ requires this for its blocking workers; it is also what lets commands wait out a restart.
    maxRetriesPerRequest: null,
    connectTimeout: options.timeoutMs ?? 5000,
    // Reconnect waits: the one back-off (200 ms doubling, jittered, at most 2 s).
    // Returning null ends the client (ioredis then fails every command it holds): see stopReconnecting.
    retryStrategy: (times) =>
      policy.on ? backoffDelay(times, { baseMs: 200, capMs: 2000, minMs: 100 }) : null,
  });
  reconnecting.set(redis, policy);
  // ioredis prints "[ioredis] Unhandled error event" with a stack for every failed attempt that no
  // listener takes. The first attempt's failure is this function's to report (with the socket's own
  // reason, not ioredis' "Connection is closed"); later ones are reconnects, which ioredis makes by
  // itself and which the worker logs through its own listener (start-worker.ts).
  let socketError: Error | undefined;
  redis.on('error', (error: Error) => {
    socketError ??= error;
  });
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('timed out')), options.timeoutMs ?? 5000).unref(),
      ),
    ]);
    return redis;
  } catch (error) {
    redis.disconnect();
    throw new UserFacingError(
      `cannot reach Redis at ${redactKnownSecrets(safeHost(url))}: ${(socketError ?? (error as Error)).message}`,
      {
        fix: 'start Redis or correct REDIS_URL; one-shot commands also run without REDIS_URL (jobs run inline)',
        cause: error,
      },
    );
  }
}

/**
 * Whether Redis answers a PING within `timeoutMs`. Our clients queue commands while Redis is away
 * (`maxRetriesPerRequest: null`), so a plain PING would wait for its return instead of saying no.
 */
export async function redisAnswers(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  let timer: NodeJS.Timeout | undefined;
  const ping = redis.ping().then(
    () => true,
    () => false,
  );
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([ping, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * For a stop while Redis is down: this connection and every duplicate of it stop reconnecting, so each
 * ends at its next attempt (within the 2 s cap of the back-off) and fails the commands it holds instead
 * of keeping them for a Redis that may not return. Then `dropRedis` each one.
 */
export function stopReconnecting(redis: Redis): void {
  const policy = reconnecting.get(redis);
  if (policy) policy.on = false;
}

/**
 * Ends a connection whose Redis does not answer, failing the commands it holds. ioredis' disconnect()
 * on a connection that waits to reconnect only cancels the wait: the connection never ends and its
 * commands wait forever. So such a connection is left to end at its next attempt (stopReconnecting);
 * one that still looks connected (Redis silent, not gone) is cut.
 */
export function dropRedis(redis: Redis): void {
  if (redis.status !== 'reconnecting') redis.disconnect();
}

function safeHost(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 6379}`;
  } catch {
    return 'the configured URL';
  }
}
