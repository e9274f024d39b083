/**
 * Connects to Redis with a bounded first attempt, so a wrong REDIS_URL is one clear error instead of an
 * endless reconnect loop. Once connected, ioredis reconnects by itself when Redis goes away and returns.
 */
import { Redis } from 'ioredis';
import { UserFacingError } from '../errors/index.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { backoffDelay } from '../time/backoff-delay.ts';

export async function connectRedis(url: string, options: { timeoutMs?: number } = {}): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    // BullMQ requires this for its blocking workers; it is also what lets commands wait out a restart.
    maxRetriesPerRequest: null,
    connectTimeout: options.timeoutMs ?? 5000,
    // Reconnect waits: the one back-off (200 ms doubling, jittered, at most 2 s).
    retryStrategy: (times) => backoffDelay(times, { baseMs: 200, capMs: 2000, minMs: 100 }),
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
      `cannot reach Redis at ${redactKnownSecrets(safeHost(url))}: ${(error as Error).message}`,
      {
        fix: 'start Redis or correct REDIS_URL; one-shot commands also run without REDIS_URL (jobs run inline)',
        cause: error,
      },
    );
  }
}

function safeHost(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 6379}`;
  } catch {
    return 'the configured URL';
  }
}
