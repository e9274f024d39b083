/**
 * The first sync against real PostgreSQL (src/budget/first-sync.ts): the plan keeps the recent poll on
 * once the stream is heard until every user was polled over the lookback by a poll queued since; the
 * tick's slice takes the users not covered yet in uid order after the keyset, leaves out those whose
 * poll is in flight, and what was covered is kept in the warehouse, so a restarted process resumes; the
 * first sync completes once nobody is left, and the recent poll then follows the stream. Migration 0021
 * marks the first sync of a stream heard before it complete.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { firstSyncRange, firstSyncWindows, readFirstSyncStatus } from '../../src/budget/first-sync.ts';
import { readBudgetPlan } from '../../src/budget/read-budget-plan.ts';
import { configSchema } from '../../src/config/schema.ts';
import { streamCursor } from '../../src/warehouse/cursors.ts';
import {
  beginFirstSync,
  completeFirstSync,
  countFirstSyncUsers,
  markFirstSyncPolled,
  moveFirstSyncOn,
  readFirstSync,
} from '../../src/warehouse/first-sync.ts';
import { migrateToLatest } from '../../src/warehouse/migrate.ts';
import { markRecentPollDone, markRecentPollsEnqueued } from '../../src/warehouse/recent-polls.ts';
import { createEmptyDatabase, migrationsBefore } from '../helpers/pg.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const ORG = 'org-first';
const STREAM = 'validic-sync';
const NOW = Date.parse('2026-11-27T12:00:00Z');
const TICK_MS = 60_000;
const UIDS = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];

const config = configSchema.parse({
  organizations: [{ orgId: ORG, token: 't', requestsPerHour: 10_000_000 }],
});
const org = config.organizations[0]!;

describe('the first sync in the warehouse', () => {
  const t = useTestDatabase();

  async function heard(lastLiveAt: string) {
    const key = streamCursor(STREAM, 0).key;
    await sql`
      insert into validic_sync.checkpoints (org_id, key, value) values (${ORG}, ${key}, ${JSON.stringify({ lastLiveAt })}::jsonb)
      on conflict (org_id, key) do update set value = excluded.value`.execute(t.warehouse.db);
  }

  it('polls every user once after the stream is heard, resumes where it stood, then lets the stream carry freshness', async () => {
    const db = t.warehouse.db;
    for (const uid of UIDS)
      await sql`insert into validic.users (org_id, uid, raw) values (${ORG}, ${uid}, '{}')`.execute(db);

    // Never heard: the fallback polls the lookback; the first sync waits.
    let budget = await readBudgetPlan(db, config, org, NOW);
    expect(budget.recentPoll).toMatchObject({ polling: true, firstSync: false });
    expect(await readFirstSyncStatus(db, ORG, budget)).toMatchObject({
      state: 'waiting',
      reason: expect.stringContaining('not been heard'),
    });

    // Two users were polled (and one is still in flight) before the stream was heard: neither counts.
    await markRecentPollsEnqueued(db, ORG, ['u1', 'u2'], new Date(NOW - 120_000));
    await markRecentPollDone(db, ORG, 'u1', new Date(NOW - 60_000));

    await heard(new Date(NOW - 30_000).toISOString());
    budget = await readBudgetPlan(db, config, org, NOW);
    expect(budget.recentPoll).toMatchObject({ mode: 'fallback', polling: true, days: 3, firstSync: true });
    expect(budget.firstSync).toBeUndefined();
    // The first sync takes what the recent poll may; the scheduled audit waits for it.
    expect(budget.plan.perHour.audit).toBe(0);

    const range = firstSyncRange(config.sync.lookbackDays, NOW);
    expect(range).toEqual({ from: '2026-11-24', to: '2026-11-27' });
    const sync = await beginFirstSync(db, { orgId: ORG, streamName: STREAM, ...range, at: new Date(NOW) });
    // Begun twice (two ticks of a fleet): one first sync.
    expect(
      await beginFirstSync(db, {
        orgId: ORG,
        streamName: STREAM,
        from: '2026-01-01',
        to: '2026-01-02',
        at: new Date(),
      }),
    ).toEqual(sync);
    const windows = firstSyncWindows(sync);
    expect(windows).toEqual([{ startDate: '2026-11-23', endDate: '2026-11-28' }]);

    const slice = await budget.readFirstSyncSlice({ tickMs: TICK_MS, sync, windows });
    // u2's poll is in flight: not queued again until it completes. Everyone else is due, in uid order.
    expect(slice.uids).toEqual(['u1', 'u3', 'u4', 'u5', 'u6']);
    expect(slice.reachedEnd).toBe(true);

    // A tick that queued u1..u3 only, then the process died; u1's and u3's polls completed meanwhile.
    await moveFirstSyncOn(db, ORG, STREAM, 'u3');
    await markRecentPollsEnqueued(db, ORG, ['u1', 'u3'], new Date(NOW));
    for (const uid of ['u1', 'u3']) {
      await markRecentPollDone(db, ORG, uid, new Date(NOW + 5_000));
      await markFirstSyncPolled(db, {
        orgId: ORG,
        streamName: STREAM,
        uid,
        ...windows[0]!,
        at: new Date(NOW + 5_000),
      });
    }
    // A window of other days (a regular poll's, or a first sync begun on another day) does not count.
    await markFirstSyncPolled(db, {
      orgId: ORG,
      streamName: STREAM,
      uid: 'u4',
      startDate: '2026-11-24',
      endDate: '2026-11-28',
      at: new Date(NOW),
    });

    // The restarted process reads where the first sync stood: on after u3.
    const later = NOW + 60_000;
    budget = await readBudgetPlan(db, config, org, later);
    expect(budget.firstSync).toMatchObject({
      nextUid: 'u3',
      completedAt: null,
      from: '2026-11-24',
      to: '2026-11-27',
    });
    const resumed = await budget.readFirstSyncSlice({ tickMs: TICK_MS, sync: budget.firstSync!, windows });
    expect(resumed.uids).toEqual(['u4', 'u5', 'u6']);
    expect(await countFirstSyncUsers(db, ORG, STREAM, windows)).toEqual({ pollable: 6, pending: 4 });
    expect(await readFirstSyncStatus(db, ORG, budget)).toMatchObject({
      state: 'running',
      reason: '4 of 6 users left to poll',
      users: 6,
      pending: 4,
    });

    // A removed user needs no covering; the others are polled.
    await sql`update validic.users set removed_at = now() where org_id = ${ORG} and uid = 'u6'`.execute(db);
    for (const uid of ['u2', 'u4', 'u5'])
      await markFirstSyncPolled(db, {
        orgId: ORG,
        streamName: STREAM,
        uid,
        ...windows[0]!,
        at: new Date(later),
      });
    expect(await countFirstSyncUsers(db, ORG, STREAM, windows)).toEqual({ pollable: 5, pending: 0 });
    // Nobody left, but no users listing was read to its end yet: users the platform has may be unstored.
    expect(await readFirstSyncStatus(db, ORG, await readBudgetPlan(db, config, org, later))).toMatchObject({
      state: 'running',
      pending: 0,
      reason: expect.stringContaining('waiting for a users listing read to its end'),
    });
    // With the recent poll not scheduled, there is no first sync.
    const off = configSchema.parse({
      schedules: { enabled: false },
      organizations: [{ orgId: ORG, token: 't' }],
    });
    expect(
      await readFirstSyncStatus(db, ORG, await readBudgetPlan(db, off, off.organizations[0]!, later)),
    ).toMatchObject({ state: 'off' });
    expect(
      (
        await budget.readFirstSyncSlice({
          tickMs: TICK_MS,
          sync: { streamName: STREAM, nextUid: null },
          windows,
        })
      ).uids,
    ).toEqual([]);

    expect(
      await completeFirstSync(db, { orgId: ORG, streamName: STREAM, at: new Date(later), usersCovered: 5 }),
    ).toBe(true);
    expect(
      await completeFirstSync(db, { orgId: ORG, streamName: STREAM, at: new Date(), usersCovered: 9 }),
    ).toBe(false);
    budget = await readBudgetPlan(db, config, org, later);
    expect(budget.recentPoll).toMatchObject({ mode: 'fallback', polling: false, firstSync: false });
    expect(budget.plan.perHour.audit).toBeGreaterThan(0);
    expect(await readFirstSyncStatus(db, ORG, budget)).toEqual({
      streamName: STREAM,
      state: 'complete',
      reason: expect.any(String),
      startedAt: new Date(NOW).toISOString(),
      completedAt: new Date(later).toISOString(),
      from: '2026-11-24',
      to: '2026-11-27',
      users: 5,
      pending: 0,
    });

    // Another primary stream (a renamed one) begins its own first sync.
    const renamed = configSchema.parse({
      organizations: [{ orgId: ORG, token: 't', stream: { name: 'renamed' } }],
    });
    const key = streamCursor('renamed', 1).key;
    await sql`insert into validic_sync.checkpoints (org_id, key, value)
      values (${ORG}, ${key}, ${JSON.stringify({ lastLiveAt: new Date(later).toISOString() })}::jsonb)`.execute(
      db,
    );
    const other = await readBudgetPlan(db, renamed, renamed.organizations[0]!, later);
    expect(other.recentPoll).toMatchObject({ polling: true, firstSync: true });
    expect(other.firstSync).toBeUndefined();
  });
});

describe('migration 0021', () => {
  const t = useTestDatabase(createEmptyDatabase);

  it('marks the first sync of a primary stream heard before it complete, and of no other', async () => {
    const db = t.warehouse.db;
    await migrateToLatest(db, migrationsBefore('0021'));
    const checkpoint = async (orgId: string, key: string, value: Record<string, unknown>) =>
      sql`insert into validic_sync.checkpoints (org_id, key, value) values (${orgId}, ${key}, ${JSON.stringify(value)}::jsonb)`.execute(
        db,
      );
    await checkpoint('a', 'stream:checkpoint:validic-sync:0', { lastLiveAt: '2026-01-01T00:00:00Z' });
    await checkpoint('a', 'stream:checkpoint:validic-sync:2', { lastLiveAt: '2026-01-02T00:00:00Z' });
    await checkpoint('b', 'stream:checkpoint:name:with:colons:1', { lastLiveAt: '2026-01-01T00:00:00Z' });
    // Written before a frame ever arrived (no lastLiveAt), and another kind of cursor: no first sync.
    await checkpoint('c', 'stream:checkpoint:validic-sync:0', { newestCreatedAt: '2026-01-01T00:00:00Z' });
    await checkpoint('c', 'users:last_full_sync', { at: '2026-01-01T00:00:00Z' });

    expect(await migrateToLatest(db)).toContain('0021_first_syncs');
    const rows = await sql<{ org_id: string; stream_name: string; done: boolean; from_date: string | null }>`
      select org_id, stream_name, completed_at is not null as done, from_date
      from validic_sync.first_syncs order by org_id`.execute(db);
    expect(rows.rows).toEqual([
      { org_id: 'a', stream_name: 'validic-sync', done: true, from_date: null },
      { org_id: 'b', stream_name: 'name:with:colons', done: true, from_date: null },
    ]);
    expect(await readFirstSync(db, 'c', 'validic-sync')).toBeUndefined();
  });
});
