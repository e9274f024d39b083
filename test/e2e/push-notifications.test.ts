/**
 * Push notifications end to end, against a running `validic-sync worker` (the real CLI, its push listener,
 * BullMQ on real Redis, real PostgreSQL): the sandbox POSTs the provider's documented body
 * (`{ data: [ { _id: <user>, activity_type, activity_date, source } ] }`), signed with its application
 * secret; the worker verifies the signature, turns each item into a targeted retrieval of that user's
 * object around the activity date (filtered by source) and the records land with arrived_via `push`,
 * with no scheduled poll at all. The provider's published example shape, signed here from the formula,
 * lands the same way. A bad signature, a stale timestamp and a secret in the query string each get 401
 * (no reason given) and store nothing; the stale one, the org's own signature, is counted as a refused
 * minute. A signature is used once, across the fleet: replayed with another body to a second worker
 * process, it gets 401 and stores nothing.
 */
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, type TestRedis } from '../helpers/redis.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { startWorkerChild, type WorkerChild, workerChildEnv } from '../helpers/worker-fleet.ts';

const SECRET = 'e2e-push-secret-4f1c9a7b2d';
const WAIT = { timeout: 30_000, interval: 100 };

describe('push notifications into a running worker', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let testRedis: TestRedis;
  let worker: WorkerChild;
  let pushUrl: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, users: 3, days: 10 });
    db = await createTestDatabase();
    testRedis = createTestRedis('push-e2e');
    worker = await startWorkerChild(
      workerChildEnv(sandbox, db.url, testRedis, {
        VALIDIC_APPLICATION_SECRET: sandbox.applicationSecret,
        PUSH_SECRET: SECRET,
        PUSH_COALESCE_SECONDS: '1',
      }),
    );
    // The worker's push listener (its own port; only the push path answers there).
    pushUrl = worker.pushUrl!;
    expect(pushUrl).toMatch(/\/push\/v1$/);
  }, 60_000);
  afterAll(async () => {
    if (worker) {
      await worker.stop();
    }
    await testRedis?.cleanup();
    await sandbox?.close();
    await db?.drop();
  });

  const stored = async (ids: string[]) =>
    (
      await sql<{ object: string; id: string; last_updated: Date; arrived_via: string }>`
        select object, id, last_updated, arrived_via from validic.legacy_records
        where id = any(${ids}::text[]) order by object, id`.execute(db.warehouse.db)
    ).rows.map((r) => ({ ...r, last_updated: r.last_updated.toISOString() }));

  const expected = (records: { object: string; _id: string; last_updated: string }[]) =>
    records
      .map((r) => ({
        object: r.object,
        id: r._id,
        last_updated: new Date(r.last_updated).toISOString(),
        arrived_via: 'push',
      }))
      .sort((a, b) => (a.object === b.object ? (a.id < b.id ? -1 : 1) : a.object < b.object ? -1 : 1));

  const counts = async () =>
    (
      await sql<{ notifications: number; records: number }>`
        select (select count(*)::int from validic_sync.push_notifications) as notifications,
               (select count(*)::int from validic.legacy_records) as records`.execute(db.warehouse.db)
    ).rows[0]!;

  /** The provider's signature, written out from the published formula (not the worker's code). */
  const sign = (timestamp: string, secret = sandbox.applicationSecret) =>
    createHmac('sha1', secret).update(`${sandbox.legacyToken}notification${timestamp}`).digest('base64');
  /** `2015-12-08T16:04:18029095657000`: the provider example's timestamp form. */
  const providerTimestamp = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}029095657000`;

  it('loads what the sandbox announces in the documented, signed body, by targeted retrievals', async () => {
    sandbox.control.registerPushUrl(pushUrl);
    sandbox.control.resetStats();
    const [first, second] = sandbox.truth.legacyUsers();
    const added = [
      { ...sandbox.control.addLegacyRecord({ object: 'fitness', user_id: first!._id }), object: 'fitness' },
      {
        ...sandbox.control.addLegacyRecord({ object: 'nutrition', user_id: second!._id }),
        object: 'nutrition',
      },
      {
        ...sandbox.control.addLegacyRecord({ object: 'tobacco_cessation', user_id: first!._id }),
        object: 'tobacco_cessation',
      },
    ];
    const old = sandbox.truth.legacyRecords('routine')[0]!;
    const updated = {
      ...sandbox.control.updateLegacyRecord('routine', old._id, { steps: 4242 }),
      object: 'routine',
    };
    await sandbox.control.flushNotifications();

    const deliveries = sandbox.truth.deliveries().filter((d) => d.kind === 'push');
    expect(deliveries.map((d) => d.status)).toEqual([202, 202, 202, 202]);
    // Exactly the documented body and headers.
    expect(deliveries[0]!.body).toEqual({
      data: [
        {
          _id: first!._id,
          activity_type: 'fitness',
          activity_date: added[0]!.timestamp.replace(/Z$/, '+00:00'),
          source: added[0]!.source,
        },
      ],
    });
    expect(Object.keys(deliveries[0]!.headers).sort()).toEqual([
      'content-type',
      'x-validic-signature',
      'x-validic-timestamp',
    ]);

    const announced = [...added, updated];
    await waitForStep(
      'the announced records stored',
      async () => expect(await stored(announced.map((r) => r._id))).toEqual(expected(announced)),
      WAIT,
    );
    const routine = await sql<{ steps: number }>`
      select (raw->>'steps')::int as steps from validic.legacy_records where id = ${old._id}`.execute(
      db.warehouse.db,
    );
    expect(routine.rows[0]!.steps).toBe(4242);
    // Targeted: user-level object lists (by activity date, filtered by source), nothing org-wide.
    const calls = Object.keys(sandbox.control.stats().byEndpoint);
    expect(calls.sort()).toEqual(
      [
        'GET /v1/organizations/:org/users/:uid/fitness.json',
        'GET /v1/organizations/:org/users/:uid/nutrition.json',
        'GET /v1/organizations/:org/users/:uid/routine.json',
        'GET /v1/organizations/:org/users/:uid/tobacco_cessation.json',
      ].sort(),
    );
    const notifications = await sql<{ status: string; org_id: string; n: number }>`
      select status, org_id, count(*)::int as n from validic_sync.push_notifications
      group by status, org_id`.execute(db.warehouse.db);
    expect(notifications.rows).toEqual([{ status: 'queued', org_id: sandbox.orgId, n: 4 }]);
    sandbox.control.unregisterPushUrl(pushUrl);
  });

  it("loads what the provider's published example shape announces: the user's object ± 1 day, that source only", async () => {
    const user = sandbox.truth.legacyUsers()[2]!;
    const at = Math.floor(Date.now() / 1000) * 1000 - 5 * 86_400_000;
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const add = (hours: number, source: string) => ({
      ...sandbox.control.addLegacyRecord({
        object: 'weight',
        user_id: user._id,
        fields: { timestamp: iso(at + hours * 3_600_000), source },
      }),
      object: 'weight',
    });
    const announced = add(0, 'scale_a');
    const sameSourceThatDay = add(6, 'scale_a');
    const otherSource = add(1, 'scale_b');
    const outsideTheWindow = add(72, 'scale_a');
    const timestamp = providerTimestamp(Date.now());
    const response = await fetch(pushUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-validic-timestamp': timestamp,
        'x-validic-signature': sign(timestamp),
      },
      body: JSON.stringify({
        data: [
          {
            _id: user._id,
            activity_type: 'weight',
            activity_date: announced.timestamp.replace(/Z$/, '+00:00'),
            source: 'scale_a',
          },
        ],
      }),
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ status: 'queued', items: 1, enqueued: 1 });
    const all = [announced, sameSourceThatDay, otherSource, outsideTheWindow].map((r) => r._id);
    await waitForStep(
      'the announced record and its same-source neighbour stored',
      async () => expect(await stored(all)).toEqual(expected([announced, sameSourceThatDay])),
      WAIT,
    );
  });

  it('answers 401 to a bad signature, a stale timestamp and a secret in the query, storing nothing', async () => {
    const before = await counts();
    const refusedBefore = await sql<{ n: number }>`
      select count(*)::int as n from validic_sync.push_refusals`.execute(db.warehouse.db);
    expect(refusedBefore.rows[0]!.n).toBe(0);
    const body = JSON.stringify({
      data: [
        {
          _id: sandbox.truth.legacyUsers()[0]!._id,
          activity_type: 'sleep',
          activity_date: new Date().toISOString(),
          source: 'sandbox_partner',
        },
      ],
    });
    const now = providerTimestamp(Date.now());
    const stale = providerTimestamp(Date.now() - 6 * 60_000);
    const attempts: [string, RequestInit][] = [
      [
        pushUrl,
        {
          headers: { 'x-validic-timestamp': now, 'x-validic-signature': sign(now, 'not-the-secret') },
        },
      ],
      [pushUrl, { headers: { 'x-validic-timestamp': stale, 'x-validic-signature': sign(stale) } }],
      [`${pushUrl}?secret=${SECRET}`, {}],
      [
        `${pushUrl}?secret=${SECRET}`,
        { headers: { 'x-validic-timestamp': now, 'x-validic-signature': sign(now) } },
      ],
    ];
    for (const [url, init] of attempts) {
      const response = await fetch(url, {
        method: 'POST',
        body,
        ...init,
        headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
      });
      expect(response.status).toBe(401);
      // Nothing tells the sender why.
      expect(await response.json()).toEqual({ error: 'unauthorized' });
    }
    expect((await counts()).notifications).toBe(before.notifications);
    // The provider's own signature refused for its timestamp may have carried a notification: its
    // minute is recorded (and read again by a legacy latest pass); the forged and misused ones are not.
    const refused = await sql<{ org_id: string }>`
      select org_id from validic_sync.push_refusals`.execute(db.warehouse.db);
    expect(refused.rows).toEqual([{ org_id: sandbox.orgId }]);
  });

  it('accepts a signature once across the fleet: replayed to a second worker process with another body, 401', async () => {
    const second = await startWorkerChild(
      workerChildEnv(sandbox, db.url, testRedis, {
        VALIDIC_APPLICATION_SECRET: sandbox.applicationSecret,
        PUSH_SECRET: SECRET,
        PUSH_COALESCE_SECONDS: '1',
      }),
    );
    try {
      const before = await counts();
      const [user, attacker] = sandbox.truth.legacyUsers();
      const timestamp = providerTimestamp(Date.now());
      const headers = {
        'content-type': 'application/json',
        'x-validic-timestamp': timestamp,
        'x-validic-signature': sign(timestamp),
      };
      const item = (_id: string) => ({
        data: [{ _id, activity_type: 'diabetes', activity_date: new Date().toISOString(), source: 'x' }],
      });
      const accepted = await fetch(pushUrl, {
        method: 'POST',
        headers,
        body: JSON.stringify(item(user!._id)),
      });
      expect(accepted.status).toBe(202);
      await accepted.arrayBuffer();
      for (const url of [second.pushUrl!, pushUrl]) {
        const replay = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(item(attacker!._id)),
        });
        expect(replay.status, url).toBe(401);
        expect(await replay.json()).toEqual({ error: 'unauthorized' });
      }
      expect((await counts()).notifications).toBe(before.notifications + 1);
      const fetches = await sql<{ user_id: string }>`
        select user_id from validic_sync.push_fetches
        where object = 'diabetes' and mode = 'activity'`.execute(db.warehouse.db);
      expect(fetches.rows.map((r) => r.user_id)).toEqual([user!._id]);
    } finally {
      await second.stop();
    }
  });

  it('takes the shared secret in a header, and fetches a latest window for an item with only a time', async () => {
    const record = sandbox.truth.legacyRecords('sleep')[0]!;
    const updated = sandbox.control.updateLegacyRecord('sleep', record._id, { total_sleep: 123 });
    const response = await fetch(pushUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-validic-sync-secret': SECRET },
      body: JSON.stringify({ data: [{ type: 'sleep', last_updated: updated.last_updated }] }),
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ status: 'queued', enqueued: 1 });
    await waitForStep(
      'the updated sleep record stored',
      async () => expect(await stored([record._id])).toEqual(expected([{ ...updated, object: 'sleep' }])),
      WAIT,
    );
  });
});
