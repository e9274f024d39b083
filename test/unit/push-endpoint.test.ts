/**
 * The push endpoint: the provider's signature (org told by it; bad, stale, replayed, not strict base64
 * or unsigned → 401 with no reason given, the reason in a sampled, bounded log), the shared secret
 * (header only; in the query → 401), every body stored before it is interpreted and answered 202 (an
 * unknown shape too), recognized items stored as pending fetches in the durable queue
 * (validic_sync.push_fetches: one per user, object and 28-day window, absorbing repeats) with a kick of
 * push.drain, a bad item recorded with its reason while the rest is stored, the limits (a notification
 * over maxItems processed in parts, the per-org rate → 429), refusals of any kind that may have been the
 * provider's (the cap, its signature with a refused timestamp, a replay, a body over the limit, a body
 * not stored) recorded as refused minutes and queued for a legacy latest pass, and the body size limit
 * (413) through the node:http adapter. Storage is the real PostgreSQL tables.
 */
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { handlePush, type PushDeps, type PushRequest } from '../../src/push/handle-push.ts';
import {
  createPushRateLimit,
  createPushRefusalCounter,
  createPushReplayCache,
  pushOrgResolver,
} from '../../src/push/push-admission.ts';
import { handlePushRequest } from '../../src/server/push-server.ts';
import { createPlatformClock } from '../../src/time/platform-clock.ts';
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
    replayCache: createPushReplayCache({ now: () => NOW }),
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

const fetchRows = async () =>
  (
    await sql<{
      org_id: string;
      object: string;
      mode: string;
      user_id: string;
      record_id: string;
      bucket: string;
      range_start: Date | null;
      range_end: Date | null;
      sources: string[] | null;
      items: number;
      due_at: Date;
      state: string;
      notification_id: number | null;
    }>`select org_id, object, mode, user_id, record_id, bucket, range_start, range_end, sources, items,
         due_at, state, notification_id
       from validic_sync.push_fetches order by id`.execute(db.warehouse.db)
  ).rows.map((r) => ({
    ...r,
    range_start: r.range_start?.toISOString() ?? null,
    range_end: r.range_end?.toISOString() ?? null,
    due_at: r.due_at.toISOString(),
  }));

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
  await sql`truncate validic_sync.push_notifications, validic_sync.push_fetches, validic_sync.push_refusals`.execute(
    db.warehouse.db,
  );
});

const DOCUMENTED = JSON.stringify({
  data: [
    {
      _id: '51552cd7fded0807c4000017',
      activity_type: 'fitness',
      activity_date: '2026-03-14T19:07:01+00:00',
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
  it('takes a signed documented body, routes it to the signing org and stores the targeted retrieval', async () => {
    const response = await handlePush(signed(DOCUMENTED), deps());
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'queued', items: 1, enqueued: 1 });
    const [row] = await storedRows();
    expect(row).toMatchObject({ org_id: 'org-b', status: 'queued' });
    expect(await fetchRows()).toEqual([
      {
        org_id: 'org-b',
        object: 'fitness',
        mode: 'activity',
        user_id: '51552cd7fded0807c4000017',
        record_id: '',
        bucket: '2026-03-12',
        range_start: '2026-03-14T19:07:01.000Z',
        range_end: '2026-03-14T19:07:01.000Z',
        sources: ['sample_app'],
        items: 1,
        due_at: new Date(NOW).toISOString(),
        state: 'pending',
        notification_id: row!.id,
      },
    ]);
    // The org's drain is kicked for when the items fall due (no coalescing window here: now).
    expect(queued).toEqual([
      {
        name: 'push.drain',
        payload: { orgId: 'org-b', due: new Date(NOW).toISOString() },
        extra: { delayMs: 250 },
      },
    ]);
  });

  it('accepts either service name and an ISO-8601 timestamp', async () => {
    const iso = signed(DOCUMENTED, { service: 'notifications', timestamp: '2026-03-15T11:59:30Z' });
    expect((await handlePush(iso, deps())).status).toBe(202);
  });

  it("judges a signature's age on the platform's clock, which the worker learns from the platform's answers", async () => {
    // The worker's clock runs 20 minutes behind the platform's; the provider stamps its send time on its own.
    const workerNow = NOW - 20 * 60_000;
    const platformClock = createPlatformClock(() => workerNow);
    const stamped = signed(DOCUMENTED, { timestamp: '2026-03-15T12:00:30Z' });
    expect((await handlePush(stamped, deps({ now: () => workerNow }))).status).toBe(401);
    // One answer of the platform (its Date header) and the same push is on time.
    platformClock.observeDateHeader(new Date(NOW).toUTCString(), workerNow - 50, workerNow);
    const d = deps({ now: () => platformClock.now() });
    expect((await handlePush(signed(DOCUMENTED, { timestamp: '2026-03-15T12:00:31Z' }), d)).status).toBe(202);
  });

  it('answers 401, gives no reason and stores nothing for a bad signature, a stale timestamp or no application secret', async () => {
    const refused = [
      [signed(DOCUMENTED, { secret: 'guessed' }), deps(), 'bad signature'],
      [signed(DOCUMENTED, { timestamp: '2026-03-15T11:54:59Z' }), deps(), 'stale timestamp'],
      [signed(DOCUMENTED, { timestamp: '2026-03-15T11:54:59000000000000' }), deps(), 'stale timestamp'],
      // A future timestamp is bounded as tightly as a past one.
      [signed(DOCUMENTED, { timestamp: '2026-03-15T12:05:01Z' }), deps(), 'stale timestamp'],
      [signed(DOCUMENTED, { timestamp: 'soon' }), deps(), 'unreadable timestamp'],
      [signed(DOCUMENTED), deps({ signingOrgs: [] }), 'signed, but no application secret is configured'],
    ] as const;
    for (const [request, d, reason] of refused) {
      const response = await handlePush(request, d);
      expect(response.status).toBe(401);
      // Nothing tells an unauthenticated client why: the reason is in the log only.
      expect(response.body).toEqual({ error: 'unauthorized' });
      expect(logLines).toContain(`"reason":"${reason}"`);
    }
    expect(await storedRows()).toEqual([]);
    expect((await handlePush(signed(DOCUMENTED, { timestamp: '2026-03-15T12:04:59Z' }), deps())).status).toBe(
      202,
    );
  });

  it('accepts a signature once: a replay with another body is 401 and stores nothing', async () => {
    const d = deps();
    const first = signed(DOCUMENTED);
    expect((await handlePush(first, d)).status).toBe(202);
    const other = JSON.stringify({
      data: [{ _id: 'attacker', activity_type: 'weight', activity_date: '2026-03-15T08:00:00Z' }],
    });
    for (const body of [other, DOCUMENTED]) {
      const replay = await handlePush({ ...first, body }, d);
      expect(replay.status).toBe(401);
      expect(replay.body).toEqual({ error: 'unauthorized' });
    }
    expect(await storedRows()).toHaveLength(1);
    expect((await fetchRows()).map((f) => f.user_id)).toEqual(['51552cd7fded0807c4000017']);
    expect(logLines).toContain('"reason":"replayed signature"');
  });

  it('reads the signature as strict base64 only: no other spelling of its bytes passes', async () => {
    const good = signed(DOCUMENTED);
    const sig = good.headers['x-validic-signature'] as string;
    expect(sig).toMatch(/^[A-Za-z0-9+/]{27}=$/);
    // The last character before the padding carries 2 unused bits: flipping them spells the same bytes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = alphabet.indexOf(sig[26]!);
    const nonCanonical = `${sig.slice(0, 26)}${alphabet[last ^ 1]}=`;
    expect(Buffer.from(nonCanonical, 'base64')).toEqual(Buffer.from(sig, 'base64'));
    const urlSafe = sig.replaceAll('+', '-').replaceAll('/', '_');
    const variants = [
      sig.slice(0, 27),
      `${sig}===junk?`,
      ` ${sig}x`,
      nonCanonical,
      ...(urlSafe !== sig ? [urlSafe] : []),
      `${sig.slice(0, 27)}`.replace(/$/, '=='),
    ];
    for (const variant of variants) {
      const response = await handlePush(
        { ...good, headers: { ...good.headers, 'x-validic-signature': variant } },
        deps(),
      );
      expect(response.status, variant).toBe(401);
    }
    expect(await storedRows()).toEqual([]);
    expect((await handlePush(good, deps())).status).toBe(202);
  });

  it('counts its own signature refused for the timestamp, or replayed, as a refused minute of its org', async () => {
    const recover = deps({
      refusalRecovery: (key) => [{ orgId: key, objects: ['fitness'] }],
      refusals: createPushRefusalCounter({ now: () => NOW }),
    });
    const stale = await handlePush(signed(DOCUMENTED, { timestamp: '2026-03-15T11:30:00Z' }), recover);
    expect(stale.status).toBe(401);
    const first = signed(DOCUMENTED);
    expect((await handlePush(first, recover)).status).toBe(202);
    expect((await handlePush({ ...first, body: '{}' }, recover)).status).toBe(401);
    // A forged signature is nobody's notification: not counted.
    expect((await handlePush(signed(DOCUMENTED, { secret: 'guessed' }), recover)).status).toBe(401);
    const minutes = await sql<{ org_id: string; refused: number }>`
      select org_id, refused from validic_sync.push_refusals`.execute(db.warehouse.db);
    // Two refusals of org-b this minute (written at the first): its latest window is queued.
    expect(minutes.rows).toEqual([{ org_id: 'org-b', refused: 1 }]);
    expect((await fetchRows()).filter((f) => f.mode === 'refused')).toMatchObject([
      { org_id: 'org-b', object: 'fitness', state: 'pending' },
    ]);
    expect(logLines).toContain('"kind":"stale timestamp"');
    expect(logLines).toContain('"kind":"replayed signature"');
  });

  it('logs unauthenticated requests sampled and bounded: a line per reason a minute, no query', async () => {
    const d = deps();
    const long = `/push/v1?${'x'.repeat(15_000)}`;
    for (let i = 0; i < 350; i++) {
      const response = await handlePush({ ...post('{}', 'none'), url: long }, d);
      expect(response.status).toBe(401);
    }
    const lines = logLines.split('\n').filter((l) => l.includes('push request refused'));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(500);
    // The next minute's first line says how many the last one left out.
    let now = NOW + 60_000;
    const later = deps({ now: () => now, log: d.log! });
    await handlePush({ ...post('{}', 'none'), url: long }, later);
    now += 1;
    expect(logLines.split('\n').filter((l) => l.includes('push request refused'))).toHaveLength(2);
    expect(logLines).toContain('"suppressed":349');
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
    expect(logLines).toContain('a secret in the query string');
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

  it('stores one pending fetch per recognized item, routed to its organization', async () => {
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
        { object: 'weight', last_updated: '2026-03-15T11:30:00Z', organization_id: 'org-b' },
        { object: 'weight', organization_id: 'unknown-org' },
      ],
    });
    const response = await handlePush(post(body), deps({ updatedMarginMs: 60_000 }));
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'partial', items: 4, enqueued: 3 });
    const [row] = await storedRows();
    const common = { sources: null, items: 1, due_at: new Date(NOW).toISOString(), state: 'pending' };
    expect((await fetchRows()).map(({ notification_id: _id, ...r }) => r)).toEqual([
      {
        ...common,
        org_id: 'org-a',
        object: 'fitness',
        mode: 'record',
        user_id: 'u1',
        record_id: 'r1',
        bucket: '',
        range_start: null,
        range_end: null,
      },
      {
        ...common,
        org_id: 'org-b',
        object: 'sleep',
        mode: 'record',
        user_id: 'u2',
        record_id: 'r2',
        bucket: '',
        range_start: null,
        range_end: null,
      },
      {
        ...common,
        org_id: 'org-b',
        object: 'weight',
        mode: 'updated',
        user_id: '',
        record_id: '',
        bucket: '2026-03-15T11',
        range_start: '2026-03-15T11:29:00.000Z',
        range_end: '2026-03-15T11:31:00.000Z',
      },
    ]);
    expect(row).toMatchObject({ status: 'partial', items: 4, enqueued: 3, org_id: null });
    expect(row!.error).toMatch(/organization unknown-org is not configured/);
    expect(queued.map((q) => q.payload)).toEqual([
      { orgId: 'org-a', due: new Date(NOW).toISOString() },
      { orgId: 'org-b', due: new Date(NOW).toISOString() },
    ]);
  });

  it('records a bad item of the documented shape with its reason, and stores the rest', async () => {
    const good = Array.from({ length: 50 }, (_, i) => ({
      _id: `u${i}`,
      activity_type: 'weight',
      activity_date: '2026-03-15T08:00:00+00:00',
      source: 'scale',
    }));
    const bad = { _id: 'bad\u0000user', activity_type: 'weight', activity_date: '2026-03-15T08:00:00Z' };
    const body = JSON.stringify({ data: [...good.slice(0, 20), bad, ...good.slice(20)] });
    const response = await handlePush(signed(body), deps());
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'partial', items: 50, enqueued: 50 });
    const [row] = await storedRows();
    expect(row).toMatchObject({ status: 'partial', enqueued: 50 });
    expect(row!.error).toContain('item 20: the user id "bad\\u0000user" cannot be used in a URL path');
    expect((await fetchRows()).map((f) => f.user_id).sort()).toEqual(good.map((g) => g._id).sort());
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

  it('keeps the items stored and answers 202 when the drain cannot be kicked', async () => {
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
    expect(row).toMatchObject({ status: 'queued', items: 1, enqueued: 1, error: null });
    expect(await fetchRows()).toMatchObject([{ org_id: 'org-a', mode: 'record', state: 'pending' }]);
    expect(logLines).toContain('could not kick the push drain');
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

  it('stores a notification of more than maxItems whole and processes it in parts, never 413', async () => {
    const response = await handlePush(signed(items(7)), deps({ maxItems: 3 }));
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ status: 'queued', items: 7, enqueued: 7 });
    const rows = await sql<{ items_processed: number; enqueued: number }>`
      select items_processed, enqueued from validic_sync.push_notifications`.execute(db.warehouse.db);
    expect(rows.rows).toEqual([{ items_processed: 7, enqueued: 7 }]);
    expect((await fetchRows()).map((f) => f.user_id)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6']);
  });

  it('resumes a notification from its progress, storing no part twice', async () => {
    const { storePushItemsInParts } = await import('../../src/push/process-push-notification.ts');
    await handlePush(signed(items(2)), deps({ maxItems: 1 }));
    const id = (await storedRows())[0]!.id;
    // As if the process had died after the first part: progress 1 of 2, the second part not stored.
    await sql`update validic_sync.push_notifications set items_processed = 1 where id = ${id}`.execute(
      db.warehouse.db,
    );
    await sql`delete from validic_sync.push_fetches where user_id = 'u1'`.execute(db.warehouse.db);
    const routed = ['u0', 'u1'].map((u) => ({
      item: { object: 'weight' as const, userId: u, activityDate: '2026-03-15T08:00:00.000Z' },
      orgId: 'org-b',
    }));
    const timing = { now: NOW, coalesceMs: 0, updatedMarginMs: 60_000, partItems: 1 };
    expect(await storePushItemsInParts(db.warehouse.db, id, routed, timing)).toBe(2);
    expect((await fetchRows()).map((f) => [f.user_id, f.items])).toEqual([
      ['u0', 1],
      ['u1', 1],
    ]);
    // Done already: nothing more.
    expect(await storePushItemsInParts(db.warehouse.db, id, routed, timing)).toBe(2);
    expect((await fetchRows()).map((f) => f.items)).toEqual([1, 1]);
  });

  it('answers 429 past the per-org rate in one minute, records the minute and queues its latest pass', async () => {
    let now = NOW + 5_000;
    const rateLimit = createPushRateLimit({ perMinute: 2, now: () => now });
    // Each notification signed at its own time (a signature is used once).
    let sent = 0;
    const signedNow = (body: string) =>
      signed(body, {
        timestamp: `${new Date(now).toISOString().slice(0, 19)}${String(++sent).padStart(12, '0')}`,
      });
    const limited = deps({
      rateLimit,
      refusals: createPushRefusalCounter({ now: () => now }),
      now: () => now,
      coalesceMs: 10_000,
      updatedMarginMs: 600_000,
      refusalRecovery: (key) => [{ orgId: key, objects: ['fitness', 'weight'] }],
    });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await handlePush(signedNow(items(1)), limited)).status);
    expect(statuses).toEqual([202, 202, 429, 429]);
    const refused = await handlePush(signedNow(items(1)), limited);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.body.error).toMatch(/more push notifications for org-b this minute/);
    expect(await storedRows()).toHaveLength(2);
    const minutes = await sql<{ org_id: string; minute: Date; refused: number }>`
      select org_id, minute, refused from validic_sync.push_refusals`.execute(db.warehouse.db);
    expect(minutes.rows).toEqual([{ org_id: 'org-b', minute: new Date(NOW), refused: 1 }]);
    // One org-level latest window per object, from the overlap before the minute to its end, due once
    // the minute (and a coalescing window) is over.
    const recovery = (await fetchRows()).filter((f) => f.mode === 'refused');
    expect(recovery.map(({ notification_id: _n, ...r }) => r)).toEqual(
      ['fitness', 'weight'].map((object) => ({
        org_id: 'org-b',
        object,
        mode: 'refused',
        user_id: '',
        record_id: '',
        bucket: '2026-03-15T12',
        range_start: '2026-03-15T11:50:00.000Z',
        range_end: '2026-03-15T12:01:00.000Z',
        sources: null,
        items: 1,
        due_at: '2026-03-15T12:01:10.000Z',
        state: 'pending',
      })),
    );
    expect(queued.at(-1)).toEqual({
      name: 'push.drain',
      payload: { orgId: 'org-b', due: '2026-03-15T12:01:10.000Z' },
      extra: { delayMs: 65_250 },
    });
    expect(logLines).toContain('"kind":"rate limit"');
    // The next minute's refusals join the same pending windows (same hour), which now end later.
    now += 60_000;
    for (let i = 0; i < 3; i++) await handlePush(signedNow(items(1)), limited);
    const joined = (await fetchRows()).filter((f) => f.mode === 'refused');
    expect(joined.map((f) => [f.items, f.range_start, f.range_end, f.due_at])).toEqual(
      ['fitness', 'weight'].map(() => [
        2,
        '2026-03-15T11:50:00.000Z',
        '2026-03-15T12:02:00.000Z',
        '2026-03-15T12:02:10.000Z',
      ]),
    );
    now += 60_000;
    expect((await handlePush(signedNow(items(1)), limited)).status).toBe(202);
  });

  it('lets the pending fetch of a user and object absorb repeats: wider range, sources united', async () => {
    const at = (activityDate: string, source?: string) =>
      JSON.stringify({
        data: [
          { _id: 'u1', activity_type: 'weight', activity_date: activityDate, ...(source ? { source } : {}) },
        ],
      });
    const push = (body: string, now: number) =>
      handlePush(signed(body), deps({ coalesceMs: 10_000, now: () => now }));
    await push(at('2026-03-15T08:00:00Z', 'scale'), NOW + 1_000);
    await push(at('2026-03-14T08:00:00Z', 'scale'), NOW + 9_000);
    await push(at('2026-03-15T09:00:00Z', 'app'), NOW + 30_000);
    expect(await fetchRows()).toMatchObject([
      {
        mode: 'activity',
        user_id: 'u1',
        range_start: '2026-03-14T08:00:00.000Z',
        range_end: '2026-03-15T09:00:00.000Z',
        sources: ['app', 'scale'],
        items: 3,
        // Due at the end of the first item's window; later items join it while it waits.
        due_at: new Date(NOW + 10_000).toISOString(),
      },
    ]);
    expect(queued.map((q) => (q.extra as { delayMs: number }).delayMs)).toEqual([9_250, 1_250, 10_250]);
    // An item without a source widens it to every source.
    await push(at('2026-03-15T10:00:00Z'), NOW + 31_000);
    expect((await fetchRows())[0]).toMatchObject({ sources: null, items: 4 });
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
    // The message is true: nothing was stored, and it names the setting.
    expect(await declared.json()).toMatchObject({
      error: 'body larger than 1024 bytes: nothing was stored',
      fix: expect.stringContaining('http.maxBodyBytes'),
    });
    const streamed = await fetch(`${base}/push/v1`, {
      method: 'POST',
      headers,
      body: new Blob([big]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await storedRows()).toEqual([]);
    // Both refusals of an admitted push counted for its org (the shared secret's only org here: none).
    const minutes = await sql<{ org_id: string }>`select org_id from validic_sync.push_refusals`.execute(
      db.warehouse.db,
    );
    expect(minutes.rows).toEqual([{ org_id: '(shared secret)' }]);
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
