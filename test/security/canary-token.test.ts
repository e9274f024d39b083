/**
 * Secrets: a canary token (v2 and legacy) and application secret used for a full run — backfill, legacy,
 * stream and a worker receiving signed push notifications,
 * with 429s, 5xx, cut bodies and dropped streams causing errors and retries, at LOG_LEVEL=debug — must
 * never appear in the CLI's stdout or stderr, in error messages (a rejected token included), in the
 * worker's /metrics, in Redis (budget keys, queue and job data) or in any text/jsonb column of any table
 * in `validic` and `validic_sync`. Also end to end: plain-http base URLs are refused (exit 2, the message
 * names the fix), and a redirect to another host is not followed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type CliResult, runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';
import { startWorkerChild } from '../helpers/worker-fleet.ts';

const CANARY = `canary${randomBytes(12).toString('hex')}`;
const LEGACY_CANARY = `canarylegacy${randomBytes(12).toString('hex')}`;
const APP_CANARY = `canaryapp${randomBytes(12).toString('hex')}`;
const CANARIES = [CANARY, LEGACY_CANARY, APP_CANARY];

function expectNoCanary(where: string, text: string): void {
  for (const canary of CANARIES) {
    // Also its first half: a "redaction" that keeps a prefix would still leak most of the secret.
    expect(text.includes(canary.slice(0, Math.ceil(canary.length / 2))), `${where} holds the canary`).toBe(
      false,
    );
  }
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('a canary token never leaks', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let redis: TestRedis;
  let dir: string;
  const outputs: { what: string; result: CliResult }[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 71,
      users: 3,
      days: 10,
      token: CANARY,
      legacyToken: LEGACY_CANARY,
      applicationSecret: APP_CANARY,
      pokeIntervalMs: 100,
      faults: { rate429: 0.1, rate5xx: 0.1, truncateRate: 0.05, streamDropEvery: 5 },
    });
    db = await createTestDatabase();
    redis = createTestRedis('canary');
    dir = mkdtempSync(join(tmpdir(), 'validic-canary-'));
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
    await redis?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  // Backfill twice, legacy, a stream with drops and its reconciliation pass, the worker: a long run.
  it('survives a full run with errors and retries at debug level', { timeout: 240_000 }, async () => {
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        redisPrefix: redis.prefix.slice(0, -1),
        // 429s back off for minutes by default (the hour's budget is spent); the sandbox's are random.
        stream: {
          staleAfterMs: 1000,
          batchMaxWaitMs: 50,
          backoffBaseMs: 20,
          backoffCapMs: 200,
          rateLimitedBaseMs: 200,
          rateLimitedCapMs: 1000,
        },
        organizations: [{ legacy: { enabled: true } }],
      }),
    );
    const env = sandboxEnv(sandbox, {
      DATABASE_URL: db.url,
      REDIS_URL: 'redis://127.0.0.1:6379',
      VALIDIC_SYNC_CONFIG: config,
      LOG_LEVEL: 'debug',
      HTTP_PORT: '0',
      PUSH_PORT: '0',
      VALIDIC_APPLICATION_SECRET: APP_CANARY,
    });
    // Two passes, so retries and already-loaded records (unchanged) both happen.
    for (const pass of [1, 2]) {
      outputs.push({
        what: `backfill ${pass}`,
        result: await runCli(['backfill', '--from', day(30), '--to', day(0)], env),
      });
    }
    outputs.push({
      what: 'legacy',
      result: await runCli(['legacy', '--from', `${day(12)}T00:00:00Z`, '--to', `${day(0)}T23:59:59Z`], env),
    });

    const stream = spawnCli(['stream', '--exit-when-idle', '2'], env);
    await vi.waitFor(() => expect(sandbox.truth.streams()[0]?.members).toBeGreaterThan(0), {
      timeout: 20_000,
      interval: 20,
    });
    const from = sandbox.truth.events().length;
    sandbox.control.startLiveFeed({ ratePerSecond: 50 });
    await vi.waitFor(() => expect(sandbox.truth.events().length - from).toBeGreaterThan(40), {
      timeout: 20_000,
      interval: 20,
    });
    sandbox.control.stopLiveFeed();
    outputs.push({ what: 'stream', result: await stream.result });

    // The worker: queued jobs in Redis, schedules, /metrics.
    const worker = await startWorkerChild(env, ['--no-streams']);
    let metrics = '';
    await vi.waitFor(
      async () => {
        metrics = await (await fetch(`${worker.url}/metrics`)).text();
        expect(metrics).toMatch(/validic/);
        const keys = await redis.connect().keys(`${redis.prefix}*`);
        expect(keys.length).toBeGreaterThan(3);
      },
      { timeout: 30_000, interval: 200 },
    );
    expectNoCanary('/metrics', metrics);
    // Signed push notifications (the application secret signs them) and a refused one.
    const pushUrl = worker.pushUrl!;
    sandbox.control.registerPushUrl(pushUrl);
    sandbox.control.addLegacyRecord({ object: 'weight', user_id: sandbox.truth.legacyUsers()[0]!._id });
    await sandbox.control.flushNotifications();
    expect(sandbox.truth.deliveries().map((d) => d.status)).toContain(202);
    const forged = await fetch(pushUrl, {
      method: 'POST',
      headers: { 'x-validic-timestamp': new Date().toISOString(), 'x-validic-signature': 'Zm9yZ2Vk' },
      body: '{"data":[]}',
    });
    expect(forged.status).toBe(401);
    sandbox.control.unregisterPushUrl(pushUrl);
    await scanRedis(redis);
    worker.child.kill('SIGTERM');
    outputs.push({ what: 'worker', result: await worker.child.result });

    // A rejected token: the error message names the problem, not the token.
    const wrong = `${CANARY}x`;
    const rejected = await runCli(['backfill', '--from', day(3), '--to', day(0)], {
      ...env,
      VALIDIC_TOKEN: wrong,
    });
    expect(rejected.code).not.toBe(0);
    expect(rejected.stdout + rejected.stderr).not.toContain(wrong);
    outputs.push({ what: 'rejected token', result: rejected });

    for (const { what, result } of outputs) {
      expectNoCanary(`${what} stdout`, result.stdout);
      expectNoCanary(`${what} stderr`, result.stderr);
    }
    // The runs did meet faults and did log at debug level (or this test proves little).
    const stderr = outputs.map((o) => o.result.stderr).join('\n');
    expect(stderr).toMatch(/"level":20/);
    expect(sandbox.control.stats().rateLimited).toBeGreaterThan(0);
    expect(outputs.find((o) => o.what === 'backfill 2')?.result.code).toBe(0);

    await scanRedis(redis);
    await scanDatabase(db);
  });

  it('refuses plain-http base URLs outside loopback-with-permission, exit 2 with the fix', async () => {
    const base = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      VALIDIC_ORG_ID: 'o',
      VALIDIC_TOKEN: CANARY,
    };
    const remote = await runCli(['backfill', '--from', day(1), '--to', day(0)], {
      ...base,
      VALIDIC_API_URL: 'http://api.example.com/',
      VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true',
    });
    expect(remote.code).toBe(2);
    expect(remote.stderr).toMatch(/VALIDIC_API_URL.*not https.*use an https:\/\/ URL/);
    const loopback = await runCli(['backfill', '--from', day(1), '--to', day(0)], {
      ...base,
      VALIDIC_STREAMS_URL: 'http://127.0.0.1:9/',
    });
    expect(loopback.code).toBe(2);
    expect(loopback.stderr).toMatch(/VALIDIC_STREAMS_URL.*VALIDIC_ALLOW_INSECURE_LOOPBACK=true/);
    for (const r of [remote, loopback]) expectNoCanary('config error', r.stdout + r.stderr);
  });

  it('does not follow a redirect to another host', async () => {
    const seen: string[] = [];
    const elsewhere = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end('{}');
    });
    const elsewherePort = await listen(elsewhere);
    // "localhost" and "127.0.0.1" are different origins: the redirect leaves the configured host.
    const redirector = createServer((req, res) => {
      res.writeHead(302, { Location: `http://localhost:${elsewherePort}${req.url}` });
      res.end();
    });
    const port = await listen(redirector);
    try {
      const result = await runCli(['backfill', '--from', day(1), '--to', day(0)], {
        ...sandboxEnv(sandbox, { DATABASE_URL: db.url }),
        VALIDIC_API_URL: `http://127.0.0.1:${port}/api`,
      });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).toMatch(/redirect/i);
      expectNoCanary('redirect error', result.stdout + result.stderr);
      expect(seen).toEqual([]);
    } finally {
      redirector.close();
      elsewhere.close();
    }
  });
});

async function scanRedis(redis: TestRedis): Promise<void> {
  const client = redis.connect();
  let cursor = '0';
  let keys = 0;
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${redis.prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const key of batch) {
      keys++;
      expectNoCanary(`redis key ${key}`, key);
      const type = await client.type(key);
      let value: unknown;
      if (type === 'string') value = await client.get(key);
      else if (type === 'hash') value = await client.hgetall(key);
      else if (type === 'list') value = await client.lrange(key, 0, -1);
      else if (type === 'set') value = await client.smembers(key);
      else if (type === 'zset') value = await client.zrange(key, '0', '-1', 'WITHSCORES');
      else if (type === 'stream') value = await client.xrange(key, '-', '+');
      expectNoCanary(`redis ${type} ${key}`, JSON.stringify(value ?? null));
    }
  } while (cursor !== '0');
  expect(keys).toBeGreaterThan(0);
}

/** Every text-like column of every table in both schemas, searched in SQL. */
async function scanDatabase(db: TestDatabase): Promise<void> {
  const columns = await sql<{ schema: string; table: string; column: string }>`
    select c.table_schema as schema, c.table_name as table, c.column_name as column
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema in ('validic', 'validic_sync') and t.table_type = 'BASE TABLE'
      and (c.data_type in ('text', 'jsonb', 'json', 'character varying', 'character', 'bytea')
           or c.data_type = 'ARRAY')`.execute(db.warehouse.db);
  expect(columns.rows.length).toBeGreaterThan(20);
  let rows = 0;
  for (const { schema, table, column } of columns.rows) {
    const ident = sql.id(schema, table);
    const col = sql.id(column);
    for (const canary of CANARIES) {
      const found = await sql<{ n: number }>`
        select count(*)::int as n from ${ident} where strpos(${col}::text, ${canary.slice(0, Math.ceil(canary.length / 2))}) > 0`.execute(
        db.warehouse.db,
      );
      expect(found.rows[0]!.n, `${schema}.${table}.${column} holds the canary`).toBe(0);
    }
  }
  const stored = await sql<{ n: number }>`select count(*)::int as n from validic.records`.execute(
    db.warehouse.db,
  );
  rows = stored.rows[0]!.n;
  expect(rows).toBeGreaterThan(0);
}
