/**
 * The push endpoint: the shared secret (header or query, 401 without), every body stored before it is
 * interpreted and answered 202 (an unknown shape too), recognized items queued as legacy.fetch jobs, and
 * the body size limit (413) through the node:http adapter. Storage is the real PostgreSQL table.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import {
  handlePush,
  handlePushRequest,
  type PushDeps,
  type PushRequest,
} from '../../src/push/handle-push.ts';
import { pushOrgResolver } from '../../src/push/resolve-push-org.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const SECRET = 'push-secret-0123456789abcdef';

let db: TestDatabase;
let queued: { name: string; payload: unknown }[];
let logLines: string;

function deps(overrides: Partial<PushDeps> = {}): PushDeps {
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    logLines += chunk.toString('utf8');
  });
  return {
    secret: SECRET,
    db: db.warehouse.db,
    enqueue: (name, payload) => {
      queued.push({ name, payload });
      return true;
    },
    resolveOrg: pushOrgResolver({
      organizations: [{ orgId: 'org-a', legacyOrgId: 'legacy-a' } as never, { orgId: 'org-b' } as never],
    }),
    log: createLogger({ level: 'debug', destination }),
    ...overrides,
  };
}

const post = (body: string, auth: 'header' | 'query' | 'none' | 'wrong' = 'header'): PushRequest => ({
  method: 'POST',
  url:
    auth === 'query' ? `/push/v1?secret=${SECRET}` : auth === 'wrong' ? '/push/v1?secret=nope' : '/push/v1',
  headers: {
    'content-type': 'application/json',
    ...(auth === 'header' ? { 'x-validic-sync-secret': SECRET } : {}),
  },
  body,
});

const storedRows = async () =>
  (
    await sql<{
      id: number;
      raw: string;
      parsed: unknown;
      status: string;
      items: number;
      enqueued: number;
      error: string | null;
      org_id: string | null;
    }>`select * from validic_sync.push_notifications order by id`.execute(db.warehouse.db)
  ).rows;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  queued = [];
  logLines = '';
  await sql`truncate validic_sync.push_notifications`.execute(db.warehouse.db);
});

describe('the shared secret', () => {
  it('answers 401 and stores nothing without the right secret, and keeps the secret out of logs', async () => {
    for (const auth of ['none', 'wrong'] as const) {
      const response = await handlePush(post('{"notifications":[]}', auth), deps());
      expect(response.status).toBe(401);
    }
    expect(await storedRows()).toEqual([]);
    const ok = await handlePush(post('{"notifications":[]}', 'query'), deps());
    expect(ok.status).toBe(202);
    expect(logLines).toContain('push request without the right secret');
    expect(logLines).not.toContain(SECRET);
  });

  it('takes the secret from the header or the query', async () => {
    expect((await handlePush(post('{}', 'header'), deps())).status).toBe(202);
    expect((await handlePush(post('{}', 'query'), deps())).status).toBe(202);
  });

  it('is off (404) without a configured secret, and accepts POST only', async () => {
    expect((await handlePush(post('{}'), deps({ secret: undefined }))).status).toBe(404);
    const get = await handlePush({ ...post('{}'), method: 'GET' }, deps());
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
  });
});

describe('bodies', () => {
  it('stores a body of unknown shape, or no JSON at all, and answers 202', async () => {
    const unknown = await handlePush(post('{"hello":"world"}'), deps());
    const notJson = await handlePush(post('id=42&object=fitness'), deps());
    expect([unknown.status, notJson.status]).toEqual([202, 202]);
    expect(unknown.body.status).toBe('unrecognized');
    const rows = await storedRows();
    expect(rows.map((r) => [r.raw, r.parsed, r.status])).toEqual([
      ['{"hello":"world"}', { hello: 'world' }, 'unrecognized'],
      ['id=42&object=fitness', null, 'unrecognized'],
    ]);
    expect(rows[1]!.error).toMatch(/not JSON/);
    expect(queued).toEqual([]);
  });

  it('queues one legacy.fetch per recognized item, routed to its organization', async () => {
    const body = JSON.stringify({
      notifications: [
        {
          object: 'fitness',
          _id: 'r1',
          user_id: 'u1',
          organization_id: 'legacy-a',
          last_updated: '2026-03-15T12:00:00Z',
        },
        { object: 'sleep', url: '/v1/organizations/org-b/users/u2/sleep/r2.json' },
        { object: 'weight', organization_id: 'unknown-org' },
      ],
    });
    const response = await handlePush(post(body), deps());
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'partial', items: 3, enqueued: 2 });
    const [row] = await storedRows();
    expect(queued).toEqual([
      {
        name: 'legacy.fetch',
        payload: {
          orgId: 'org-a',
          object: 'fitness',
          recordId: 'r1',
          userId: 'u1',
          lastUpdated: '2026-03-15T12:00:00.000Z',
          notificationId: String(row!.id),
        },
      },
      {
        name: 'legacy.fetch',
        payload: {
          orgId: 'org-b',
          object: 'sleep',
          recordId: 'r2',
          userId: 'u2',
          notificationId: String(row!.id),
        },
      },
    ]);
    expect(row).toMatchObject({ status: 'partial', items: 3, enqueued: 2 });
    expect(row!.error).toMatch(/organization unknown-org is not configured/);
  });

  it('keeps the body and answers 202 when queueing fails', async () => {
    const failing = deps({
      enqueue: () => {
        throw new Error('redis is down');
      },
    });
    const response = await handlePush(
      post('[{"object":"fitness","_id":"r","user_id":"u","organization_id":"org-a"}]'),
      failing,
    );
    expect(response.status).toBe(202);
    const [row] = await storedRows();
    expect(row).toMatchObject({ status: 'failed', items: 1, enqueued: 0 });
    expect(row!.error).toMatch(/redis is down/);
  });
});

describe('the node:http adapter', () => {
  let server: Server;
  let base: string;
  let current: PushDeps;

  beforeAll(async () => {
    server = createServer((req, res) => {
      void handlePushRequest(req, res, current);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers 413 to a body over the limit, declared or streamed, and stores nothing', async () => {
    current = { ...deps(), maxBodyBytes: 1024 };
    const big = JSON.stringify({ notifications: [{ object: 'fitness', pad: 'x'.repeat(2000) }] });
    const declared = await fetch(`${base}/push/v1?secret=${SECRET}`, { method: 'POST', body: big });
    expect(declared.status).toBe(413);
    const streamed = await fetch(`${base}/push/v1?secret=${SECRET}`, {
      method: 'POST',
      body: new Blob([big]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await storedRows()).toEqual([]);
  });

  it('serves a good request end to end, and refuses a wrong path and a missing secret', async () => {
    current = { ...deps(), path: '/push/v1' };
    const ok = await fetch(`${base}/push/v1`, {
      method: 'POST',
      headers: { 'x-validic-sync-secret': SECRET, 'content-type': 'application/json' },
      body: '{"notifications":[{"object":"routine","_id":"r","user_id":"u","organization_id":"org-b"}]}',
    });
    expect(ok.status).toBe(202);
    expect(await ok.json()).toMatchObject({ accepted: true, status: 'queued', items: 1, enqueued: 1 });
    expect((await fetch(`${base}/elsewhere?secret=${SECRET}`, { method: 'POST', body: '{}' })).status).toBe(
      404,
    );
    expect((await fetch(`${base}/push/v1`, { method: 'POST', body: '{}' })).status).toBe(401);
    expect(queued).toHaveLength(1);
  });
});
