/**
 * Push at scale (issue 27, item 4): 10,000 users' notifications in one simulated hour, driven by an
 * injected clock (no real waiting), through the real push listener (HTTP, the provider's signature, the
 * fleet-wide per-minute cap in real Redis), the durable queue in real PostgreSQL, the push.drain code
 * and real legacy.fetch jobs against the sandbox over HTTP.
 *
 * Each of the sandbox's 10,000 users gets three records made available at random moments of the hour
 * (the sandbox clock follows the simulated one, so their `last_updated` is the moment); each is
 * announced in the provider's documented body. Most minutes batch the items 40 to a notification; three
 * minutes send the whole minute as ONE notification (over `push.maxItems`, so processed in parts); two
 * minutes send one item per notification, far over the per-minute cap.
 *
 * Checked: every answer is a 202 or, only past the cap, a 429 (exactly the excess of each minute);
 * every accepted item is covered by exactly one fetch that is done (its record is in the warehouse,
 * arrived via push) or durably pending; every refused item's record was read back by the refused
 * minute's legacy latest pass; push never claims more than its share (per sliding window and per hour)
 * and the platform saw no more push requests than that; every plan the drains read kept stream,
 * reconcile, the recent poll and backfill at their planned shares; and `status` shows the backlog and
 * its age.
 *
 * The plan is read with the org's real limit (2,000 requests an hour); the HTTP client that carries
 * out the fetches is given a far higher one, only so that this test's 750 requests do not wait for
 * the token bucket in real time (pacing each request is the request budget's job, tested elsewhere).
 */
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobContext } from '../../jobs/job-context.ts';
import { drainPushFetches, type PushDrainResult } from '../../jobs/push-drain.ts';
import {
  describeBudget,
  type OrgBudget,
  readBudgetPlan,
  readPushCap,
} from '../../src/budget/read-budget-plan.ts';
import { formatBudget } from '../../src/cli/commands/status.ts';
import { type Config, configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { pushDepsFromConfig } from '../../src/push/push-deps.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { type RunningServer, serverLimits } from '../../src/server/hardened-server.ts';
import { handlePushRequest, startPushServer } from '../../src/server/push-server.ts';
import type { LegacyObject } from '../../src/validic/platform-limits.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, TEST_REDIS_URL, type TestRedis } from '../helpers/redis.ts';
import { sandboxOrganization } from '../helpers/sandbox-organization.ts';

/** Another seed: PUSH_SCALE_SEED=5 npx vitest run test/integration/push-at-scale.test.ts */
const SEED = Number(process.env.PUSH_SCALE_SEED ?? 27);
const USERS = 10_000;
const ITEMS_PER_USER = 3;
const HOUR = 3_600_000;
const STEP = 10_000;
const CAP_PER_MINUTE = 120;
const MAX_ITEMS = 60;
const BATCH = 40;
const WHOLE_MINUTES = new Set([5, 29, 53]);
const BURST_MINUTES = new Set([17, 41]);
const OBJECTS: LegacyObject[] = [
  'fitness',
  'routine',
  'nutrition',
  'sleep',
  'weight',
  'diabetes',
  'biometrics',
];
const SOURCES = ['fitbit', 'sandbox_partner', 'scale_app'];

/** mulberry32: a small seeded PRNG, so the hour is the same on every run. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Item {
  at: number;
  userId: string;
  object: LegacyObject;
  source: string;
  recordId?: string;
  activityDate?: string;
  /** Answer to the notification that carried it. */
  status?: number;
  postedAt?: number;
}

const isoSeconds = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

describe('push at scale: 10,000 users in one simulated hour', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let warehouse: Warehouse;
  let testRedis: TestRedis;
  let runtime: Runtime;
  let pushServer: RunningServer;
  let config: Config;
  let now: number;
  // The hour starts SEED minutes past a fixed hour, so seeds also vary whether the refused minutes
  // share a UTC hour (one merged latest window per object) or not.
  const T0 = Date.UTC(2026, 2, 15, 12, SEED % 60);

  beforeAll(async () => {
    now = T0;
    sandbox = await startSandbox({
      seed: SEED,
      users: USERS,
      days: 1,
      now: new Date(T0),
      mix: { measurement: 0.1, nutrition: 0, intraday: 0, summary: 0, workout: 0, sleep: 0, cgm: 0 },
    });
    db = await createTestDatabase();
    // Commits without waiting for the WAL flush: this shared machine's fsync, not the code, would
    // otherwise set the test's pace. Atomicity and visibility are unchanged.
    const url = new URL(db.url);
    url.searchParams.set('options', '-c synchronous_commit=off');
    warehouse = await openWarehouse({ databaseUrl: url.href });
    testRedis = createTestRedis('push-scale');
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
      push: { ratePerMinute: CAP_PER_MINUTE, maxItems: MAX_ITEMS, coalesceSeconds: 10 },
    };
    config = configSchema.parse({ ...base, organizations: [{ ...org, requestsPerHour: 2000 }] });
    runtime = await openRuntime(
      configSchema.parse({ ...base, organizations: [{ ...org, requestsPerHour: 10_000_000 }] }),
      silentLogger,
      { warehouse: warehouse, useRedis: false },
    );
    // The org's v2 users, so the plan has a recent poll to protect (all dormant: no records).
    await sql`insert into validic.users (org_id, uid, raw)
      select ${sandbox.orgId}, 'user-' || g, '{}'::jsonb from generate_series(1, ${USERS}) g`.execute(
      warehouse.db,
    );
  }, 120_000);

  afterAll(async () => {
    await pushServer?.close();
    await runtime?.close();
    await testRedis?.cleanup();
    await sandbox?.close();
    await warehouse?.close();
    await db?.drop();
  });

  it('loses no notification, keeps every share, and refuses only past the per-minute cap', async () => {
    const orgId = sandbox.orgId;
    const random = prng(SEED);
    const users = sandbox.truth.legacyUsers().slice(0, USERS);
    expect(users).toHaveLength(USERS);
    // Each user's items in distinct seconds: identical items in one notification would count once.
    const items: Item[] = users.flatMap((u) => {
      const seconds = new Set<number>();
      while (seconds.size < ITEMS_PER_USER) seconds.add(Math.floor(random() * (HOUR / 1000)));
      return [...seconds].map((second) => ({
        at: T0 + second * 1000,
        userId: u._id,
        object: OBJECTS[Math.floor(random() * OBJECTS.length)]!,
        source: SOURCES[Math.floor(random() * SOURCES.length)]!,
      }));
    });
    items.sort((a, b) => a.at - b.at);

    // The plan before any push: what the other kinds of work get when push asks nothing.
    const quiet = (await readBudgetPlan(warehouse.db, config, config.organizations[0]!, T0)).plan;
    expect(quiet.perHour.pushAndReconcile).toBeGreaterThan(0);

    // The worker's push listener, with its deps as the worker assembles them (clock injected).
    const kicks = new Map<string, number>();
    const deps = pushDepsFromConfig({
      config,
      warehouse: warehouse,
      enqueue: (name, payload, extra) => {
        const due = (payload as { due: string }).due;
        if (name !== 'push.drain' || kicks.has(due)) return false;
        kicks.set(due, now + (extra?.delayMs ?? 0));
        return true;
      },
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
    const pushUrl = `${pushServer.url}${config.http.pushPath}`;
    let sent = 0;
    const post = async (batch: Item[]) => {
      // Signed as the provider signs: the formula written out, with the (simulated) send time; the
      // fraction's digits tell apart notifications sent within one second (a signature is used once).
      const timestamp = `${new Date(now).toISOString().slice(0, 19)}${String(++sent).padStart(12, '0')}`;
      const signature = createHmac('sha1', sandbox.applicationSecret)
        .update(`${sandbox.legacyToken}notification${timestamp}`)
        .digest('base64');
      const response = await fetch(pushUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-validic-timestamp': timestamp,
          'x-validic-signature': signature,
        },
        body: JSON.stringify({
          data: batch.map((i) => ({
            _id: i.userId,
            activity_type: i.object,
            activity_date: i.activityDate,
            source: i.source,
          })),
        }),
      });
      await response.arrayBuffer();
      for (const i of batch) Object.assign(i, { status: response.status, postedAt: now });
      return response.status;
    };

    // The drains, as the worker runs them (kicks when due, the tick every minute), recording each plan.
    const plans: { at: number; budget: OrgBudget }[] = [];
    const drains: PushDrainResult[] = [];
    const runner = createInlineRunner(runtime, new AbortController().signal, 4);
    const failures: string[] = [];
    runner.on('failed', (job, error) => failures.push(`${job.name} ${job.id}: ${error.message}`));
    const planOrg = config.organizations[0]!;
    const drainCtx: JobContext = {
      ...runtime.jobContext({
        jobId: 'push.drain',
        attempt: 1,
        signal: new AbortController().signal,
        enqueue: async (name, payload) => runner.enqueue(name as never, payload as never),
      }),
      readPushCap: () => readPushCap(warehouse.db, config, planOrg),
    };
    // Fetches run as they are queued (four at a time); the loop waits for them once a minute.
    const drain = async () => {
      drains.push(await drainPushFetches(drainCtx, orgId, now));
    };
    const tick = async () => {
      await drain();
      await runner.drain();
      plans.push({ at: now, budget: await readBudgetPlan(warehouse.db, config, planOrg, now) });
    };

    const statusByMinute = new Map<number, number[]>();
    let whole: Item[] = [];
    let next = 0;
    for (let step = 0; step < HOUR / STEP; step++) {
      const stepEnd = T0 + (step + 1) * STEP;
      const minute = Math.floor((step * STEP) / 60_000);
      const due: Item[] = [];
      for (; next < items.length && items[next]!.at < stepEnd; next++) {
        const item = items[next]!;
        now = item.at;
        sandbox.control.setClock(new Date(now));
        const record = sandbox.control.addLegacyRecord({
          object: item.object,
          user_id: item.userId,
          fields: { timestamp: isoSeconds(now - 5 * 60_000), source: item.source },
        });
        item.recordId = record._id;
        item.activityDate = record.timestamp.replace(/Z$/, '+00:00');
        due.push(item);
      }
      const statuses = statusByMinute.get(minute) ?? [];
      statusByMinute.set(minute, statuses);
      if (BURST_MINUTES.has(minute)) {
        for (const item of due) {
          now = item.at;
          statuses.push(await post([item]));
        }
      } else if (WHOLE_MINUTES.has(minute)) {
        whole.push(...due);
        if ((step + 1) % 6 === 0 && whole.length > 0) {
          now = whole.at(-1)!.at;
          statuses.push(await post(whole));
          whole = [];
        }
      } else {
        for (let i = 0; i < due.length; i += BATCH) {
          const batch = due.slice(i, i + BATCH);
          now = batch.at(-1)!.at;
          statuses.push(await post(batch));
        }
      }
      now = stepEnd;
      sandbox.control.setClock(new Date(now));
      for (const [key, runAt] of kicks) {
        if (runAt > now) continue;
        kicks.delete(key);
        await drain();
      }
      if ((step + 1) % 6 === 0) await tick();
    }
    expect(failures).toEqual([]);

    // 1. Only 429s, only past the cap, exactly the excess of each minute; everything else 202.
    let refused = 0;
    for (const [minute, statuses] of statusByMinute) {
      const over = Math.max(0, statuses.length - CAP_PER_MINUTE);
      expect(
        statuses.filter((s) => s === 429),
        `minute ${minute}`,
      ).toHaveLength(over);
      expect(statuses.filter((s) => s !== 429 && s !== 202)).toEqual([]);
      if (over > 0) expect(BURST_MINUTES.has(minute)).toBe(true);
      refused += over;
    }
    expect(refused).toBeGreaterThan(400);
    const accepted = items.filter((i) => i.status === 202);
    const refusedItems = items.filter((i) => i.status === 429);
    expect(accepted.length + refusedItems.length).toBe(USERS * ITEMS_PER_USER);

    // 2. Every accepted item: in exactly one fetch, done or durably pending (none failed, none lost).
    const rows = (
      await sql<{
        id: number;
        object: string;
        mode: string;
        user_id: string;
        range_start: Date | null;
        range_end: Date | null;
        sources: string[] | null;
        items: number;
        first_item_at: Date;
        claimed_at: Date | null;
        state: string;
        requests: number | null;
      }>`select id, object, mode, user_id, range_start, range_end, sources, items, first_item_at,
           claimed_at, state, requests
         from validic_sync.push_fetches where org_id = ${orgId}`.execute(warehouse.db)
    ).rows;
    expect(new Set(rows.map((r) => r.state))).toEqual(new Set(['done', 'pending']));
    const activity = rows.filter((r) => r.mode === 'activity');
    expect(activity.reduce((n, r) => n + r.items, 0)).toBe(accepted.length);
    const byKey = new Map<string, typeof activity>();
    for (const r of activity)
      byKey.set(`${r.user_id}|${r.object}`, [...(byKey.get(`${r.user_id}|${r.object}`) ?? []), r]);
    const coveredBy = new Map<Item, (typeof activity)[number]>();
    for (const item of accepted) {
      const at = Date.parse(item.activityDate!);
      const row = byKey
        .get(`${item.userId}|${item.object}`)
        ?.find(
          (r) =>
            r.range_start!.getTime() <= at &&
            at <= r.range_end!.getTime() &&
            (r.sources === null || r.sources.includes(item.source)) &&
            r.first_item_at.getTime() <= item.postedAt! &&
            (r.claimed_at === null || r.claimed_at.getTime() >= item.postedAt!),
        );
      expect(row, `item of ${item.userId} ${item.object}`).toBeDefined();
      coveredBy.set(item, row!);
    }
    // At most one pending fetch per (user, object): 30,000 items, far fewer rows.
    const pending = activity.filter((r) => r.state === 'pending');
    expect(new Set(pending.map((r) => `${r.user_id}|${r.object}`)).size).toBe(pending.length);

    // 3. Done fetches loaded what they announced (arrived via push); so did the refused minutes' passes.
    const stored = new Set(
      (
        await sql<{ id: string }>`select id from validic.legacy_records
          where org_id = ${orgId} and arrived_via = 'push'`.execute(warehouse.db)
      ).rows.map((r) => r.id),
    );
    const fetchedItems = accepted.filter((i) => coveredBy.get(i)!.state === 'done');
    expect(fetchedItems.length).toBeGreaterThan(300);
    expect(fetchedItems.filter((i) => !stored.has(i.recordId!))).toEqual([]);
    const recovery = rows.filter((r) => r.mode === 'refused');
    // One org-level window per object and UTC hour the refused minutes fell in.
    expect(new Set(recovery.map((r) => r.object))).toEqual(new Set(OBJECTS));
    expect(recovery.length % OBJECTS.length).toBe(0);
    expect(recovery.every((r) => r.state === 'done')).toBe(true);
    expect(refusedItems.filter((i) => !stored.has(i.recordId!))).toEqual([]);

    // 4. Push's share: never more claimed than its window allows, never more than its cap an hour.
    const cap = plans.at(-1)!.budget.push.capPerHour;
    const last = drains.at(-1)!;
    const claims = rows
      .filter((r) => r.claimed_at)
      .map((r) => ({ at: r.claimed_at!.getTime(), cost: r.requests ?? 1 }))
      .sort((a, b) => a.at - b.at);
    for (const c of claims) {
      const inWindow = claims.filter((o) => o.at > c.at - last.windowMs && o.at <= c.at);
      expect(inWindow.length).toBeLessThanOrEqual(last.perWindow);
    }
    expect(claims.length).toBeLessThanOrEqual(cap);
    const pushRequests = Object.entries(sandbox.control.stats().byEndpoint)
      .filter(([endpoint]) => endpoint.startsWith('GET /v1/'))
      .reduce((n, [, statuses]) => n + Object.values(statuses).reduce((a, b) => a + b, 0), 0);
    expect(pushRequests).toBe(claims.reduce((n, c) => n + c.cost, 0));
    expect(pushRequests).toBeLessThanOrEqual(cap);

    // 5. Every minute's plan kept the other kinds of work at their planned shares.
    const floor = quiet.usablePerHour * config.budget.backfillMinShare;
    const reconcile = quiet.perHour.pushAndReconcile;
    for (const { budget } of plans) {
      const { plan, push } = budget;
      expect(plan.overcommitted).toBe(false);
      expect(plan.perHour.stream).toBe(quiet.perHour.stream);
      expect(plan.perHour.pushAndReconcile - push.perHour).toBeCloseTo(reconcile, 6);
      expect(push.perHour).toBeLessThanOrEqual(push.capPerHour);
      expect(push.capPerHour).toBeCloseTo(quiet.usablePerHour * config.budget.pushMaxShare, 6);
      expect(plan.perHour.backfill).toBeGreaterThanOrEqual(floor - 1e-6);
      expect(plan.perHour.recent).toBeCloseTo(
        Math.min(
          plan.recent.demandPerHour,
          quiet.usablePerHour - floor - quiet.perHour.stream - reconcile - push.perHour,
        ),
        6,
      );
    }
    expect(Math.max(...plans.map((p) => p.budget.push.perHour))).toBeCloseTo(cap, 6);

    // 6. The backlog and its age, as `status` and /metrics show them.
    const final = await readBudgetPlan(warehouse.db, config, config.organizations[0]!, now);
    const shown = describeBudget(final, now).push!;
    const oldest = Math.min(...pending.map((r) => r.first_item_at.getTime()));
    expect(shown).toMatchObject({ pending: pending.length, queued: 0, failed: 0 });
    expect(shown.oldestPendingSeconds).toBeCloseTo((now - oldest) / 1000, 0);
    expect(shown.refusedLastHour).toBeGreaterThan(0);
    expect(formatBudget(describeBudget(final, now))).toContainEqual(
      expect.stringMatching(
        new RegExp(`^  push backlog: ${pending.length} pending \\(\\d+ due, oldest \\d+ min ago\\)`),
      ),
    );

    // 7. Each accepted notification was processed to its end (the whole-minute ones in parts).
    const notifications = await sql<{ status: string; items: number; items_processed: number }>`
      select status, items, items_processed from validic_sync.push_notifications`.execute(warehouse.db);
    expect(notifications.rows.filter((n) => n.status !== 'queued' || n.items_processed !== n.items)).toEqual(
      [],
    );
    expect(Math.max(...notifications.rows.map((n) => n.items))).toBeGreaterThan(MAX_ITEMS * 5);

    console.log(
      JSON.stringify({
        items: items.length,
        notifications: notifications.rows.length,
        refused,
        fetchRows: rows.length,
        claimed: claims.length,
        pushRequests,
        cap: Math.round(cap),
        pending: pending.length,
        oldestPendingMinutes: Math.round((now - oldest) / 60_000),
        drains: drains.length,
      }),
    );
  }, 600_000);
});
