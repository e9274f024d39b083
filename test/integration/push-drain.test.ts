/**
 * push.drain and the legacy.fetch jobs it queues, against real PostgreSQL and the sandbox over HTTP:
 * a notification whose processing was cut off is resumed (a fresh one is left to its request); due
 * fetches are claimed, fetched and marked done with the requests they took; a fetch the platform refuses
 * for good is marked failed with the reason; a queued fetch whose job was lost is queued again, and fails
 * after the third time; push.prune removes finished fetches and refused minutes past the retention,
 * never waiting ones.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { JobContext } from '../../jobs/job-context.ts';
import { drainPushFetches, PUSH_FETCH_LOST_AFTER_MS } from '../../jobs/push-drain.ts';
import { pushPrune } from '../../jobs/push-prune.ts';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { pushFetchOfItem } from '../../src/push/push-items.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { storePushFetches } from '../../src/warehouse/push-fetch-store.ts';
import { storePushNotification } from '../../src/warehouse/push-notification-store.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { sandboxOrganization } from '../helpers/sandbox-organization.ts';

describe('push.drain', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 31, users: 3, days: 5 });
    db = await createTestDatabase();
    const config = configSchema.parse({
      databaseUrl: db.url,
      allowInsecureLoopback: true,
      organizations: [
        {
          ...sandboxOrganization(sandbox),
          legacyOrgId: sandbox.legacyOrgId,
          legacyToken: sandbox.legacyToken,
          applicationSecret: sandbox.applicationSecret,
        },
      ],
    });
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
  });
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    await sql`truncate validic_sync.push_notifications, validic_sync.push_fetches, validic_sync.push_refusals`.execute(
      db.warehouse.db,
    );
  });

  const rows = async () =>
    (
      await sql<{
        id: number;
        user_id: string;
        object: string;
        state: string;
        claims: number;
        requests: number | null;
        error: string | null;
      }>`select id, user_id, object, state, claims, requests, error from validic_sync.push_fetches
         order by id`.execute(db.warehouse.db)
    ).rows;

  /** Drains at `now`, then runs the legacy.fetch jobs it queued to their end. */
  const drainAt = async (now: number) => {
    const runner = createInlineRunner(runtime, new AbortController().signal, 2);
    const ctx: JobContext = runtime.jobContext({
      jobId: 'push.drain',
      attempt: 1,
      signal: new AbortController().signal,
      enqueue: async (name, payload) => runner.enqueue(name as never, payload as never),
    });
    const result = await drainPushFetches(ctx, sandbox.orgId, now);
    const failed = await runner.drain();
    return { result, failed: failed.map((f) => f.error.message) };
  };

  it('resumes a notification cut off before its items were stored, not one still at work', async () => {
    const user = sandbox.truth.legacyUsers()[0]!;
    const body = (object: string) =>
      JSON.stringify({
        data: [
          { _id: user._id, activity_type: object, activity_date: '2026-03-15T08:00:00+00:00', source: 'x' },
        ],
      });
    const stale = await storePushNotification(db.warehouse.db, {
      raw: body('weight'),
      parsed: JSON.parse(body('weight')),
      contentType: 'application/json',
      orgId: sandbox.orgId,
    });
    // A shared-secret push (no org told at arrival), its item naming the legacy org.
    const shared = JSON.stringify({
      notifications: [{ object: 'sleep', user_id: user._id, organization_id: sandbox.legacyOrgId }],
    });
    const unsigned = await storePushNotification(db.warehouse.db, {
      raw: shared,
      parsed: JSON.parse(shared),
      contentType: 'application/json',
    });
    const fresh = await storePushNotification(db.warehouse.db, {
      raw: body('fitness'),
      parsed: JSON.parse(body('fitness')),
      contentType: 'application/json',
      orgId: sandbox.orgId,
    });
    const now = Date.now();
    await sql`update validic_sync.push_notifications set received_at = ${new Date(now - 180_000)}
      where id in (${stale}, ${unsigned})`.execute(db.warehouse.db);
    const { result } = await drainAt(now);
    expect(result.resumed).toBe(2);
    const notifications = await sql<{ id: number; status: string; items_processed: number; org_id: string }>`
      select id, status, items_processed, org_id from validic_sync.push_notifications order by id`.execute(
      db.warehouse.db,
    );
    expect(notifications.rows).toEqual([
      { id: stale, status: 'queued', items_processed: 1, org_id: sandbox.orgId },
      { id: unsigned, status: 'queued', items_processed: 1, org_id: sandbox.orgId },
      { id: fresh, status: 'received', items_processed: 0, org_id: sandbox.orgId },
    ]);
    expect((await rows()).map((r) => r.object).sort()).toEqual(['sleep', 'weight']);
  });

  it('claims due fetches, fetches them and marks them done, or failed with the reason', async () => {
    const record = sandbox.truth.legacyRecords('weight')[0]!;
    const user = sandbox.truth.legacyUsers().find((u) => u._id === record.user_id);
    const now = Date.now();
    const timing = { now: now - 60_000, coalesceMs: 0, updatedMarginMs: 600_000 };
    await storePushFetches(
      db.warehouse.db,
      [
        pushFetchOfItem(
          { object: 'weight', userId: user!._id, activityDate: new Date(record.timestamp).toISOString() },
          sandbox.orgId,
          timing,
        ),
        pushFetchOfItem(
          { object: 'weight', userId: 'no-such-user', activityDate: new Date(now).toISOString() },
          sandbox.orgId,
          timing,
        ),
        // Not due yet: stays pending.
        pushFetchOfItem({ object: 'sleep', userId: user!._id }, sandbox.orgId, {
          ...timing,
          now: now + 60_000,
        }),
      ],
      { now },
    );
    const { result, failed } = await drainAt(now);
    expect(result).toMatchObject({ claimed: 2, enqueued: 2, windowMs: 600_000 });
    expect(failed).toHaveLength(1);
    expect(await rows()).toMatchObject([
      { user_id: user!._id, state: 'done', claims: 1, requests: 1, error: null },
      { user_id: 'no-such-user', state: 'failed', claims: 1, error: expect.stringMatching(/404/) },
      { object: 'sleep', state: 'pending', claims: 0 },
    ]);
    const stored = await sql<{ arrived_via: string }>`
      select arrived_via from validic.legacy_records where id = ${record._id}`.execute(db.warehouse.db);
    expect(stored.rows).toEqual([{ arrived_via: 'push' }]);
  });

  it('queues a lost fetch again, and fails it after the third time', async () => {
    const now = Date.now();
    const user = sandbox.truth.legacyUsers()[1]!;
    const fetch = (object: 'weight' | 'fitness') =>
      pushFetchOfItem(
        { object, userId: user._id, activityDate: new Date(now).toISOString() },
        sandbox.orgId,
        {
          now: now - 2 * PUSH_FETCH_LOST_AFTER_MS,
          coalesceMs: 0,
          updatedMarginMs: 600_000,
        },
      );
    await storePushFetches(db.warehouse.db, [fetch('weight'), fetch('fitness')], { now });
    const lostAt = new Date(now - PUSH_FETCH_LOST_AFTER_MS - 1000);
    await sql`update validic_sync.push_fetches set state = 'queued', claimed_at = ${lostAt},
      claims = case when object = 'weight' then 1 else 3 end`.execute(db.warehouse.db);
    const { result } = await drainAt(now);
    expect(result).toMatchObject({ gaveUp: 1, claimed: 1 });
    expect(await rows()).toMatchObject([
      { object: 'weight', state: 'done', claims: 2 },
      { object: 'fitness', state: 'failed', claims: 3, error: expect.stringMatching(/queued 3 times/) },
    ]);
  });

  it('push.prune removes finished fetches and refused minutes past the retention, never waiting ones', async () => {
    const now = Date.now();
    const old = new Date(now - 40 * 86_400_000);
    const user = sandbox.truth.legacyUsers()[2]!;
    await storePushFetches(
      db.warehouse.db,
      (['weight', 'fitness', 'sleep', 'routine'] as const).map((object) =>
        pushFetchOfItem({ object, userId: user._id }, sandbox.orgId, {
          now: old.getTime(),
          coalesceMs: 0,
          updatedMarginMs: 600_000,
        }),
      ),
      { now: old.getTime() },
    );
    await sql`update validic_sync.push_fetches set state = case object
        when 'weight' then 'done' when 'fitness' then 'failed' when 'sleep' then 'queued' else 'pending' end,
      done_at = case when object in ('weight', 'fitness') then ${old}::timestamptz end`.execute(
      db.warehouse.db,
    );
    await sql`insert into validic_sync.push_refusals (org_id, minute, refused)
      values (${sandbox.orgId}, ${old}, 3), (${sandbox.orgId}, ${new Date(now)}, 1)`.execute(db.warehouse.db);
    const ctx = runtime.jobContext({
      jobId: 'push.prune',
      attempt: 1,
      signal: new AbortController().signal,
      enqueue: async () => false,
    });
    expect(await pushPrune.run(ctx, {})).toMatchObject({ fetches: 3 });
    expect((await rows()).map((r) => r.state).sort()).toEqual(['pending', 'queued']);
    const refusals = await sql<{
      n: number;
    }>`select count(*)::int as n from validic_sync.push_refusals`.execute(db.warehouse.db);
    expect(refusals.rows[0]!.n).toBe(1);
  });
});
