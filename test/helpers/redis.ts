/**
 * Real Redis for tests (127.0.0.1:6379 or REDIS_URL): each test gets its own key prefix and removes
 * every key under it afterwards, so test files run in parallel against one server.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestRedis {
  /** Unique prefix for this test, ending with `:`. */
  prefix: string;
  /** Opens another connection (closed by cleanup). */
  connect(): Redis;
  /** Deletes every key under the prefix and closes all connections. */
  cleanup(): Promise<void>;
}

export function createTestRedis(name = 'test'): TestRedis {
  const prefix = `vs-test:${name}:${randomUUID()}:`;
  const clients: Redis[] = [];
  const connect = (): Redis => {
    const client = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 2 });
    clients.push(client);
    return client;
  };
  return {
    prefix,
    connect,
    async cleanup() {
      const admin = connect();
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
        cursor = next;
        if (keys.length > 0) await admin.del(...keys);
      } while (cursor !== '0');
      await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    },
  };
}
