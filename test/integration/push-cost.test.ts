/**
 * A push costs what it announces, at most, whatever its dates: two signed pushes through the real push
 * listener (the provider's signature, Redis, the durable queue in real PostgreSQL), drained over a
 * simulated hour by the push.drain code, with real legacy.fetch jobs against the sandbox over HTTP:
 *
 * 1. one user's items dated 1990-01-01 and today (a device with a bad clock): its fetches plan a year's
 *    windows at most, one request each, never the decades between;
 * 2. one body of 13,032 items, 6,516 users each announcing 1000-01-01 and 2100-01-01: clamped to the
 *    oldest and the newest window the platform serves, one request each.
 *
 * Checked after every minute: the requests the platform saw for push, and the requests push's claims
 * plan (a running fetch by its planned requests, a finished one by those it took), stay within push's
 * share (per window of the drain's gate, and in the hour within its cap); every plan keeps the stream,
 * the reconcile jobs and backfill's minimum at their shares, and the recent poll gets what they and push
 * leave; nothing announced is dropped (what exceeds the share waits, pending).
 *
 * The plan is read with the org's real limit (2,000 requests an hour); the HTTP client that carries out
 * the fetches is given a far higher one, only so that the test does not wait for the token bucket in
 * real time (pacing each request is the request budget's job, tested elsewhere).
 */
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobContext } from '../../jobs/job-context.ts';
import { drainPushFetches, type PushDrainResult } from '../../jobs/push-drain.ts';
import { readBudgetPlan, readPushCap } from '../../src/budget/read-budget-plan.ts';
import { type Config, configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { pushDepsFromConfig } from '../../src/push/push-deps.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type RunningServer, serverLimits } from '../../src/server/hardened-server.ts';
import { handlePushRequest, startPushServer } from '../../src/server/push-server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, TEST_REDIS_URL, type TestRedis } from '../helpers/redis.ts';
import { sandboxOrganization } from '../helpers/sandbox-organization.ts';

const USERS = 6_516;
const MINUTE = 60_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);

describe('push costs what it announces, at most', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let warehouse: Warehouse;
  let testRedis: TestRedis;
  let runtime: Runtime;
  let pushServer: RunningServer;
  let config: Config;
  let now = T0;

  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 36,
      users: USERS,
      days: 1,
      now: new Date(T0),
      mix: { measurement: 0.1, nutrition: 0, intraday: 0, summary: 0, workout: 0, sleep: 0, cgm: 0 },
    });
    db = await createTestDatabase();
    warehouse = await openWarehouse({ databaseUrl: db.url });
    testRedis = createTestRedis('push-cost');
    const org = {
      ...sandboxOrganization(sandbox),
      legacyOrgId: sandbox.legacyOrgId,
      legacyToken: sandbox.legacyToken,
      applicationSecret: sandbox.applicationSecret,
    };
    const base = {
      databaseUrl: db.url,
      redisUrl: TEST_REDIS_URL,
      redisPrefix: testRedis.prefix.slice(0, -1),
      allowInsecureLoopback: true,
      // The 13,032 items in ONE body, as sent (the default 1 MiB holds them with shorter ids).
      http: { maxBodyBytes: 4 * 1024 * 1024 },
      push: { coalesceSeconds: 10 },
    };
    config = configSchema.parse({ ...base, organizations: [{ ...org, requestsPerHour: 2000 }] });
    runtime = await openRuntime(
      configSchema.parse({ ...base, organizations: [{ ...org, requestsPerHour: 10_000_000 }] }),
      silentLogger,
      { warehouse, useRedis: false },
    );
    // The org's v2 users, so the plan has a recent poll to protect (all dormant: no records).
    await sql`insert into validic.users (org_id, uid, raw)
      select ${sandbox.orgId}, 'user-' || g, '{}'::jsonb from generate_series(1, 1000) g`.execute(
      warehouse.db,
    );
    const deps = pushDepsFromConfig({
      config,
      warehouse,
      enqueue: () => true,
      redis: testRedis.connect(),
      log: silentLogger,
      now: () => now,
    });
    pushServer = await startPushServer({
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: serverLimits(config.http, 'push'),
      push: { path: config.http.pushPath, handle: (req, res) => handlePushRequest(req, res, deps) },
    });
  }, 180_000);

  afterAll(async () => {
    await pushServer?.close();
    await runtime?.close();
    await testRedis?.cleanup();
    await sandbox?.close();
    await warehouse?.close();
    await db?.drop();
  });

  it('keeps push within its share and the rest of the plan at theirs, whatever the dates', async () => {
    const orgId = sandbox.orgId;
    const planOrg = config.organizations[0]!;
    const users = sandbox.truth.legacyUsers().slice(0, USERS);
    expect(users).toHaveLength(USERS);
    let sent = 0;
    const post = async (items: { _id: string; activity_date: string }[]) => {
      // Signed as the provider signs: the formula written out, at the (simulated) send time.
      const timestamp = `${new Date(now).toISOString().slice(0, 19)}${String(++sent).padStart(12, '0')}`;
      const signature = createHmac('sha1', sandbox.applicationSecret)
        .update(`${sandbox.legacyToken}notification${timestamp}`)
        .digest('base64');
      const response = await fetch(`${pushServer.url}${config.http.pushPath}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-validic-timestamp': timestamp,
          'x-validic-signature': signature,
        },
        body: JSON.stringify({ data: items.map((i) => ({ ...i, activity_type: 'weight' })) }),
      });
      expect(response.status).toBe(202);
      return (await response.json()) as { items: number; enqueued: number };
    };

    const quiet = (await readBudgetPlan(warehouse.db, config, planOrg, now)).plan;
    const cap = await readPushCap(warehouse.db, config, planOrg);
    expect(cap).toBeCloseTo(quiet.usablePerHour * config.budget.pushMaxShare, 6);

    const runner = createInlineRunner(runtime, new AbortController().signal, 4);
    const failures: string[] = [];
    runner.on('failed', (job, error) => failures.push(`${job.name} ${job.id}: ${error.message}`));
    const drainCtx: JobContext = {
      ...runtime.jobContext({
        jobId: 'push.drain',
        attempt: 1,
        signal: new AbortController().signal,
        enqueue: async (name, payload) => runner.enqueue(name as never, payload as never),
      }),
      readPushCap: () => readPushCap(warehouse.db, config, planOrg),
    };
    const platformRequests = () =>
      Object.entries(sandbox.control.stats().byEndpoint)
        .filter(([endpoint]) => endpoint.startsWith('GET /v1/'))
        .reduce((n, [, statuses]) => n + Object.values(statuses).reduce((a, b) => a + b, 0), 0);
    const seen: { at: number; requests: number }[] = [];
    const drains: PushDrainResult[] = [];
    const floor = quiet.usablePerHour * config.budget.backfillMinShare;
    const reconcile = quiet.perHour.pushAndReconcile;

    /** A minute of the worker: the drain's tick, the fetches it queued, then the checks. */
    const minute = async () => {
      now += MINUTE;
      sandbox.control.setClock(new Date(now));
      drains.push(await drainPushFetches(drainCtx, orgId, now));
      await runner.drain();
      seen.push({ at: now, requests: platformRequests() });
      const window = drains.at(-1)!;
      // The platform saw no more push requests in any window of the gate than the window allows.
      const since = seen.find((s) => s.at > now - window.windowMs) ?? seen[0]!;
      const before = seen[seen.indexOf(since) - 1]?.requests ?? 0;
      expect(
        seen.at(-1)!.requests - before,
        `window ending ${new Date(now).toISOString()}`,
      ).toBeLessThanOrEqual(window.perWindow);
      // What the claims of the window plan (or took) fits it too.
      const claimed = await sql<{ n: number }>`
        select coalesce(sum(coalesce(requests, planned_requests)), 0)::int as n
        from validic_sync.push_fetches
        where org_id = ${orgId} and claimed_at > ${new Date(now - window.windowMs)}`.execute(warehouse.db);
      expect(claimed.rows[0]!.n).toBeLessThanOrEqual(window.perWindow);
      // Every other kind of work keeps its share.
      const { plan, push } = await readBudgetPlan(warehouse.db, config, planOrg, now);
      expect(plan.overcommitted).toBe(false);
      expect(plan.perHour.stream).toBe(quiet.perHour.stream);
      expect(plan.perHour.pushAndReconcile - push.perHour).toBeCloseTo(reconcile, 6);
      expect(push.perHour).toBeLessThanOrEqual(push.capPerHour + 1e-6);
      expect(plan.perHour.backfill).toBeGreaterThanOrEqual(floor - 1e-6);
      expect(plan.perHour.recent).toBeCloseTo(
        Math.min(
          plan.recent.demandPerHour,
          quiet.usablePerHour - floor - quiet.perHour.stream - reconcile - push.perHour,
        ),
        6,
      );
      return push;
    };

    // 1. One user, a device whose clock said 1990, and today.
    const device = users[0]!._id;
    const first = await post([
      { _id: device, activity_date: '1990-01-01T00:00:00+00:00' },
      { _id: device, activity_date: '2026-11-28T08:00:00+00:00' },
    ]);
    expect(first).toMatchObject({ items: 2, enqueued: 2 });
    const deviceFetches = async () =>
      (
        await sql<{ planned_requests: number; requests: number | null; state: string; range_start: Date }>`
          select planned_requests, requests, state, range_start from validic_sync.push_fetches
          where org_id = ${orgId} and user_id = ${device} order by range_start`.execute(warehouse.db)
      ).rows;
    // The oldest window the platform serves (a year and a day back) and today's: one request each.
    const planned = await deviceFetches();
    expect(planned.map((f) => f.planned_requests)).toEqual([1, 1]);
    expect(planned[0]!.range_start.getTime()).toBe(T0 - 366 * DAY);
    for (let m = 0; m < 5; m++) await minute();
    const fetched = await deviceFetches();
    expect(fetched.map((f) => f.state)).toEqual(['done', 'done']);
    expect(fetched.reduce((n, f) => n + f.requests!, 0)).toBeLessThanOrEqual(2);

    // 2. 13,032 items: 6,516 users × 1000-01-01 and 2100-01-01.
    const flood = users.flatMap((u) => [
      { _id: u._id, activity_date: '1000-01-01T00:00:00+00:00' },
      { _id: u._id, activity_date: '2100-01-01T00:00:00+00:00' },
    ]);
    expect(flood).toHaveLength(13_032);
    expect(await post(flood)).toMatchObject({ items: 13_032, enqueued: 13_032 });
    const start = seen.at(-1)!;
    let push = await minute();
    for (let m = 1; m < 60; m++) push = await minute();
    expect(failures).toEqual([]);

    // In the hour, push took no more than its cap, and the plan reserved it its cap (it has demand).
    const hour = seen.at(-1)!.requests - start.requests;
    expect(hour).toBeLessThanOrEqual(push.capPerHour);
    expect(hour).toBeGreaterThan(push.capPerHour / 2);
    expect(push.perHour).toBeCloseTo(push.capPerHour, 6);
    // Nothing dropped: every item is in a fetch, done or pending; what the share did not allow waits.
    const states = await sql<{ state: string; fetches: number; items: number; planned: number }>`
      select state, count(*)::int as fetches, sum(items)::int as items, sum(planned_requests)::int as planned
      from validic_sync.push_fetches where org_id = ${orgId} group by state order by state`.execute(
      warehouse.db,
    );
    const byState = Object.fromEntries(states.rows.map((r) => [r.state, r]));
    expect(Object.keys(byState).sort()).toEqual(['done', 'pending']);
    expect(byState.done!.items + byState.pending!.items).toBe(2 + 13_032);
    expect(byState.pending!.planned).toBe(byState.pending!.fetches);
    console.log(
      JSON.stringify({
        capPerHour: Math.round(push.capPerHour),
        pushRequestsInTheHour: hour,
        done: byState.done!.fetches,
        pending: byState.pending!.fetches,
      }),
    );
  }, 600_000);
});
