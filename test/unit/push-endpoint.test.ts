/**
 * The push endpoint: the provider's signature (org told by it; bad, stale or unsigned → 401), the shared
 * secret (header only; in the query → 401), every body stored before it is interpreted and answered 202
 * (an unknown shape too), recognized items queued as legacy.fetch jobs, the limits (items per
 * notification → 413, per-org rate → 429, coalescing of repeats), and the body size limit (413) through
 * the node:http adapter. Storage is the real PostgreSQL table.
 */
import { createHmac } from 'node:crypto';
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
import { createPushRateLimit } from '../../src/push/push-rate-limit.ts';
import { pushOrgResolver } from '../../src/push/resolve-push-org.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const SECRET = 'push-secret-0123456789abcdef';
const APP_SECRET = 'app-secret-b-9f2e';
const NOW = Date.parse('2026-03-15T12:00:00Z');

let db: TestDatabase;
let queued: { name: string; payload: unknown; extra?: unknown }[];
let logLines: string;

function deps(overrides: Partial<PushDeps> = {}): PushDeps {
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    logLines += chunk.toString('utf8');
  });
  return {
    secret: SECRET,
    db: db.warehouse.db,
    enqueue: (name, payload, extra) => {
      queued.push({ name, payload, ...(extra ? { extra } : {}) });
      return true;
    },
    resolveOrg: pushOrgResolver({
      organizations: [{ orgId: 'org-a', legacyOrgId: 'legacy-a' } as never, { orgId: 'org-b' } as never],
    }),
    signingOrgs: [{ orgId: 'org-b', applicationSecret: APP_SECRET, accessToken: 'legacy-token-b' }],
    now: () => NOW,
    log: createLogger({ level: 'debug', destination }),
    ...overrides,
  };
}

const post = (body: string, auth: 'header' | 'query' | 'none' | 'wrong' = 'header'): PushRequest => ({
  method: 'POST',
  url: auth === 'query' ? `/push/v1?secret=${SECRET}` : '/push/v1',
  headers: {
    'content-type': 'application/json',
    ...(auth === 'header' ? { 'x-validic-sync-secret': SECRET } : {}),
    ...(auth === 'wrong' ? { 'x-validic-sync-secret': 'nope' } : {}),
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

const DOCUMENTED = JSON.stringify({
  data: [
    {
      _id: '51552cd7fded0807c4000017',
      activity_type: 'fitness',
      activity_date: '2013-10-08T19:07:01+00:00',
      source: 'sample_app',
    },
  ],
});

/** A request signed like the provider signs (formula written out here, not the code under test). */
const signed = (
  body: string,
  options: { timestamp?: string; secret?: string; service?: string; url?: string } = {},
): PushRequest => {
  const timestamp = options.timestamp ?? '2026-03-15T11:59:30000000000000';
  const signature = createHmac('sha1', options.secret ?? APP_SECRET)
    .update(`legacy-token-b${options.service ?? 'notification'}${timestamp}`)
    .digest('base64');
  return {
    method: 'POST',
    url: options.url ?? '/push/v1',
    headers: {
      'content-type': 'application/json',
      'x-validic-timestamp': timestamp,
      'x-validic-signature': signature,
    },
    body,
  };
};

describe('the provider signature', () => {
  it('takes a signed documented body, routes it to the signing org and queues the targeted retrieval', async () => {
    const response = await handlePush(signed(DOCUMENTED), deps());
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'queued', items: 1, enqueued: 1 });
    const [row] = await storedRows();
    expect(row).toMatchObject({ org_id: 'org-b', status: 'queued' });
    expect(queued).toEqual([
      {
        name: 'legacy.fetch',
        payload: {
          orgId: 'org-b',
          object: 'fitness',
          userId: '51552cd7fded0807c4000017',
          activityDate: '2013-10-08T19:07:01.000Z',
          source: 'sample_app',
          notificationId: String(row!.id),
        },
      },
    ]);
  });

  it('accepts either service name and an ISO-8601 timestamp', async () => {
    const iso = signed(DOCUMENTED, { service: 'notifications', timestamp: '2026-03-15T11:59:30Z' });
    expect((await handlePush(iso, deps())).status).toBe(202);
  });

  it('answers 401 and stores nothing for a bad signature, a stale timestamp or no application secret', async () => {
    const refused = [
      [signed(DOCUMENTED, { secret: 'guessed' }), deps(), 'bad signature'],
      [signed(DOCUMENTED, { timestamp: '2026-03-15T11:54:59Z' }), deps(), 'stale timestamp'],
      [signed(DOCUMENTED, { timestamp: '2026-03-15T11:54:59000000000000' }), deps(), 'stale timestamp'],
      [signed(DOCUMENTED), deps({ signingOrgs: [] }), 'signed push, but no application secret is configured'],
    ] as const;
    for (const [request, d, reason] of refused) {
      const response = await handlePush(request, d);
      expect(response.status).toBe(401);
      expect(response.body.reason).toBe(reason);
    }
    expect(await storedRows()).toEqual([]);
    expect(queued).toEqual([]);
  });

  it('is on with only an application secret, and refuses any secret in the query even when signed', async () => {
    expect((await handlePush(signed(DOCUMENTED), deps({ secret: undefined }))).status).toBe(202);
    const inQuery = await handlePush(signed(DOCUMENTED, { url: '/push/v1?secret=whatever' }), deps());
    expect(inQuery.status).toBe(401);
    expect(await storedRows()).toHaveLength(1);
  });
});

describe('the shared secret', () => {
  it('answers 401 and stores nothing without the right secret, and keeps the secret out of logs', async () => {
    for (const auth of ['none', 'wrong', 'query'] as const) {
      const response = await handlePush(post('{"notifications":[]}', auth), deps());
      expect(response.status).toBe(401);
    }
    expect(await storedRows()).toEqual([]);
    expect(logLines).toContain('push request refused');
    expect(logLines).toContain('a secret in the query string is never accepted');
    expect(logLines).not.toContain(SECRET);
  });

  it('takes the secret from the X-Validic-Sync-Secret header or Authorization: Bearer, never the query', async () => {
    expect((await handlePush(post('{}', 'header'), deps())).status).toBe(202);
    const bearer = { ...post('{}', 'none'), headers: { authorization: `Bearer ${SECRET}` } };
    expect((await handlePush(bearer, deps())).status).toBe(202);
    const both = { ...post('{}', 'query'), headers: { 'x-validic-sync-secret': SECRET } };
    expect((await handlePush(both, deps())).status).toBe(401);
    const upper = { ...post('{}', 'header'), url: '/push/v1?SECRET=x' };
    expect((await handlePush(upper, deps())).status).toBe(401);
  });

  it('is off (404) with neither a shared secret nor an application secret, and accepts POST only', async () => {
    expect((await handlePush(post('{}'), deps({ secret: undefined, signingOrgs: [] }))).status).toBe(404);
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

  it('keeps a partner-side sync or disconnect notification as unrecognized, not failed', async () => {
    const body = JSON.stringify({
      data: {
        type: 'disconnect',
        message: 'Confirmed disconnect',
        third_party: 'ACME',
        connected_third_parties: [],
        user: { _id: 'u1', uid: 'c1' },
      },
    });
    const response = await handlePush(post(body), deps());
    expect(response.status).toBe(202);
    const [row] = await storedRows();
    expect(row).toMatchObject({ raw: body, status: 'unrecognized', items: 0, enqueued: 0 });
    expect(row!.error).toMatch(/partner-side disconnect notification/);
  });

  it('admits (and logs) a notification when its rate cannot be counted', async () => {
    const rateLimit = { take: async () => Promise.reject(new Error('redis away')) };
    expect((await handlePush(post('{}'), deps({ rateLimit }))).status).toBe(202);
    expect(logLines).toContain('push rate could not be counted; admitted');
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

describe('limits', () => {
  const items = (n: number) =>
    JSON.stringify({
      data: Array.from({ length: n }, (_, i) => ({
        _id: `u${i}`,
        activity_type: 'weight',
        activity_date: '2026-03-15T08:00:00+00:00',
        source: 'scale',
      })),
    });

  it('answers 413 and stores nothing when a notification holds more than maxItems', async () => {
    expect((await handlePush(signed(items(3)), deps({ maxItems: 3 }))).status).toBe(202);
    const over = await handlePush(signed(items(4)), deps({ maxItems: 3 }));
    expect(over.status).toBe(413);
    expect(over.body.error).toBe('the notification holds 4 items, more than push.maxItems (3)');
    expect(await storedRows()).toHaveLength(1);
  });

  it('answers 429 past the per-org rate in one minute, and takes notifications again the next minute', async () => {
    let now = NOW;
    const rateLimit = createPushRateLimit({ perMinute: 2, now: () => now });
    const limited = deps({ rateLimit, now: () => now });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await handlePush(signed(items(1)), limited)).status);
    expect(statuses).toEqual([202, 202, 429]);
    const refused = await handlePush(signed(items(1)), limited);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.body.error).toMatch(/more push notifications for org-b this minute/);
    expect(await storedRows()).toHaveLength(2);
    now += 60_000;
    expect((await handlePush(signed(items(1), { timestamp: '2026-03-15T12:00:30Z' }), limited)).status).toBe(
      202,
    );
  });

  it('gives repeats within the coalescing window one job id, delayed to the window end', async () => {
    const { legacyFetchJobId } = await import('../../jobs/legacy-fetch.ts');
    const { legacyFetchPayload } = await import('../../jobs/payloads.ts');
    const ids = async (at: number) => {
      queued = [];
      await handlePush(signed(items(1)), deps({ coalesceMs: 10_000, now: () => at }));
      const [job] = queued;
      return { id: legacyFetchJobId(legacyFetchPayload.parse(job!.payload)), extra: job!.extra };
    };
    const first = await ids(NOW + 1_000);
    const repeat = await ids(NOW + 9_000);
    const later = await ids(NOW + 10_000);
    expect(first).toEqual({ id: repeat.id, extra: { delayMs: 9_000 } });
    expect(repeat.extra).toEqual({ delayMs: 1_000 });
    expect(later.id).not.toBe(first.id);
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
    const headers = { 'x-validic-sync-secret': SECRET };
    const declared = await fetch(`${base}/push/v1`, { method: 'POST', headers, body: big });
    expect(declared.status).toBe(413);
    const streamed = await fetch(`${base}/push/v1`, {
      method: 'POST',
      headers,
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
    const elsewhere = await fetch(`${base}/elsewhere`, {
      method: 'POST',
      headers: { 'x-validic-sync-secret': SECRET },
      body: '{}',
    });
    expect(elsewhere.status).toBe(404);
    const inQuery = await fetch(`${base}/push/v1?secret=${SECRET}`, { method: 'POST', body: '{}' });
    expect(inQuery.status).toBe(401);
    expect((await fetch(`${base}/push/v1`, { method: 'POST', body: '{}' })).status).toBe(401);
    expect(queued).toHaveLength(1);
  });
});
