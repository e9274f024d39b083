/**
 * `startOrgStream` against the sandbox over HTTP and a real PostgreSQL: a gap older than replay serves
 * (and than the new reconciliation stream reaches) is recorded in validic_sync.stream_gaps and handed to
 * one `records.backfill` while the replay fills what it can; the lock-slot hook names the cursor and is
 * re-acquired when lost; a reconciliation stream the 5-stream limit refuses leaves the primary running
 * and says why; the 5-stream limit on the primary is a clear error.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatStatus } from '../../src/cli/commands/status.ts';
import { organizationSchema } from '../../src/config/schema.ts';
import { UserFacingError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { collectSyncStatus } from '../../src/metrics/sync-status.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import type { ConnectionSlot } from '../../src/stream/run-org-stream.ts';
import { type StreamCommitEvent, startOrgStream } from '../../src/stream/run-org-stream.ts';
import type { StreamCursorValue } from '../../src/warehouse/cursors.ts';
import { listCursors, readCursor, streamCursor, streamCursorKeyPrefix } from '../../src/warehouse/cursors.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { type GapHandledBy, readOpenStreamGaps } from '../../src/warehouse/stream-bookkeeping.ts';
import { createOrgClients, type OrgClients } from '../../src/worker/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { sandboxOrganization } from '../helpers/sandbox-organization.ts';

const DAY_MS = 86_400_000;
const OPTIONS = {
  staleAfterMs: 3000,
  gapAfterMs: 1000,
  backoff: { baseMs: 20, capMs: 200 },
  microBatch: { maxFrames: 200, maxWaitMs: 20 },
};

describe('startOrgStream', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  const clients: OrgClients[] = [];

  const org = (name: string): OrgClients => {
    const config = organizationSchema.parse(sandboxOrganization(sandbox, { stream: { name } }));
    const created = createOrgClients(config, { log: silentLogger, redisPrefix: 'test' });
    clients.push(created);
    return created;
  };

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 21, users: 3, days: 3, pokeIntervalMs: 50 });
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await sandbox?.close();
    await db?.drop();
  });

  it('records a gap beyond replay, enqueues its REST backfill, and replays what replay serves', async () => {
    const checkpoint = streamCursor('old-stream', 0);
    const disconnectedAt = new Date(Date.now() - 40 * DAY_MS).toISOString();
    const seeded: StreamCursorValue = { lastLiveAt: disconnectedAt, lastDisconnectAt: disconnectedAt };
    await applyBatch(
      db.warehouse,
      { orgId: sandbox.orgId, arrivedVia: 'stream', items: [] },
      { cursors: [checkpoint.write(seeded)] },
    );
    const enqueued: unknown[] = [];
    const commits: StreamCommitEvent[] = [];
    const gaps: GapHandledBy[] = [];
    const stop = new AbortController();
    const handle = await startOrgStream({
      warehouse: db.warehouse,
      org: org('old-stream'),
      signal: stop.signal,
      consumerOptions: OPTIONS,
      enqueue: (name, payload) => {
        enqueued.push({ name, payload });
        return true;
      },
      hooks: { onCommit: (e) => commits.push(e), onGap: (e) => gaps.push(e.handledBy) },
    });
    // Past the stream checkpoint's retention the replay runs up to the present: it hands off at an
    // event created after it started (pokes never end it), so the platform keeps producing meanwhile.
    sandbox.control.startLiveFeed({ ratePerSecond: 20 });
    await vi.waitFor(() => expect(handle.states()[0]).toBe('live'), { timeout: 20_000, interval: 20 });
    sandbox.control.stopLiveFeed();
    stop.abort();
    const summary = await handle.done;

    // The reconciliation stream was created just now: it cannot re-deliver 40 days back, REST must.
    expect(handle.reconcile).toMatchObject({ ok: true, name: 'old-stream-reconcile' });
    expect(enqueued).toEqual([
      {
        name: 'records.backfill',
        payload: {
          orgId: sandbox.orgId,
          from: disconnectedAt.slice(0, 10),
          to: expect.any(String),
          gapId: expect.any(Number),
        },
      },
    ]);
    // The stop came while the feed's last data was flowing: an unclean end, left to reconciliation.
    expect(gaps[0]).toBe('rest');
    expect(gaps.slice(1)).toEqual(gaps.length > 1 ? ['reconcile'] : []);
    const open = await readOpenStreamGaps(db.warehouse.db, sandbox.orgId);
    expect(open.open).toBe(gaps.length);
    expect(open.gaps[0]).toMatchObject({
      reason: 'beyond-replay',
      from: disconnectedAt,
      streamName: 'old-stream',
      slot: 0,
      handledBy: 'rest',
    });
    expect(summary).toMatchObject({ gaps: gaps.length, backfillsEnqueued: 1 });
    expect(summary.counters.replays).toBeGreaterThanOrEqual(1);
    // The replay served the last 29 days: the generated data arrived tagged `replay`.
    const replayed = commits.filter((c) => c.via === 'replay').flatMap((c) => c.frames);
    expect(replayed.length).toBeGreaterThan(0);
    expect(summary.records.inserted).toBeGreaterThan(0);
    // Lag (commit time − created_at) is what the worker's metrics take from this hook.
    for (const c of commits)
      for (const f of c.frames)
        if (f.kind === 'data' && f.createdAt)
          expect(c.committedAt - Date.parse(f.createdAt)).toBeGreaterThanOrEqual(0);
    // What `status` shows (`--json`, and the lines): the connection's cursor and the recorded gap.
    const status = await collectSyncStatus({
      warehouse: db.warehouse,
      orgIds: [sandbox.orgId],
      streamNames: { [sandbox.orgId]: 'old-stream' },
    });
    const shown = status.orgs.find((o) => o.orgId === sandbox.orgId)!.stream;
    expect(shown.cursors.map((c) => c.key)).toEqual([checkpoint.key]);
    expect(checkpoint.parse(shown.cursors[0]!.value)).toMatchObject({
      lastDisconnectAt: expect.any(String),
      newestCreatedAt: expect.any(String),
    });
    expect(shown.gaps.open).toBe(gaps.length);
    expect(shown.gaps.oldest[0]).toMatchObject({
      reason: 'beyond-replay',
      from: disconnectedAt,
      handledBy: 'rest',
    });
    const lines = formatStatus(status).join('\n');
    expect(lines).toContain('stream old-stream');
    expect(lines).toContain(checkpoint.key);
    expect(lines).toContain(`  gaps: ${gaps.length} open`);
    // Stopped cleanly: the gap is closed and a new one opens at the last frame.
    const after = await readCursor(db.warehouse.db, sandbox.orgId, checkpoint);
    expect(Date.parse(after!.lastDisconnectAt!)).toBeGreaterThan(Date.parse(disconnectedAt));
  });

  it('names the cursor after the lock slot and takes a slot again when the lock is lost', async () => {
    const leases: { slot: number; lost: AbortController; released: boolean }[] = [];
    const acquireSlot = async (index: number): Promise<ConnectionSlot> => {
      expect(index).toBe(0);
      const lease = { slot: leases.length === 0 ? 2 : 1, lost: new AbortController(), released: false };
      leases.push(lease);
      return {
        slot: lease.slot,
        lost: lease.lost.signal,
        release: async () => {
          lease.released = true;
        },
      };
    };
    const stop = new AbortController();
    const handle = await startOrgStream({
      warehouse: db.warehouse,
      org: org('slotted'),
      signal: stop.signal,
      consumerOptions: OPTIONS,
      acquireSlot,
    });
    await vi.waitFor(() => expect(handle.states()[2]).toBe('live'), { timeout: 20_000, interval: 20 });
    leases[0]!.lost.abort();
    await vi.waitFor(() => expect(handle.states()[1]).toBe('live'), { timeout: 20_000, interval: 20 });
    expect(leases[0]!.released).toBe(true);
    stop.abort();
    await handle.done;
    expect(leases.map((l) => l.released)).toEqual([true, true]);
    const keys = (await listCursors(db.warehouse.db, sandbox.orgId, streamCursorKeyPrefix('slotted'))).map(
      (c) => c.key,
    );
    expect(keys).toEqual(['stream:checkpoint:slotted:1', 'stream:checkpoint:slotted:2']);
  });

  it('runs the primary without a reconciliation stream the 5-stream limit refuses, and says why', async () => {
    const streams = org('unused').streams;
    const existing = await streams.listStreams();
    for (let i = existing.length; i < 4; i++) await streams.createStream({ name: `other-${i}` });
    const stop = new AbortController();
    const handle = await startOrgStream({
      warehouse: db.warehouse,
      org: org('fifth'),
      signal: stop.signal,
      consumerOptions: OPTIONS,
    });
    expect(handle.reconcile).toMatchObject({
      ok: false,
      name: 'fifth-reconcile',
      why: expect.stringMatching(/5 streams/),
    });
    await vi.waitFor(() => expect(handle.states()[0]).toBe('live'), { timeout: 20_000, interval: 20 });
    stop.abort();
    await handle.done;
  });

  it('says what to do when the platform already has 5 streams', async () => {
    const streams = org('unused').streams;
    const existing = await streams.listStreams();
    for (let i = existing.length; i < 5; i++) await streams.createStream({ name: `other-${i}` });
    const stop = new AbortController();
    const attempt = startOrgStream({
      warehouse: db.warehouse,
      org: org('one-too-many'),
      signal: stop.signal,
      consumerOptions: OPTIONS,
    });
    await expect(attempt).rejects.toBeInstanceOf(UserFacingError);
    await expect(attempt).rejects.toThrow(/at most 5 streams/);
  });
});
