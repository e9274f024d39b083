/**
 * `validic-sync reconcile` end to end: a stream whose resource filter leaves connection events out never
 * carries them; `reconcile` pages `/connections` in ≤ 30-day windows, adds exactly the events the
 * warehouse lacks, and adds nothing on a second run. None of them was the stream's to deliver, so none
 * counts as missed by it (output and the `reconcile:last` cursor): a loss is only reported where the
 * stream was to deliver.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { readCursor, reconcileLastCursor, streamCursor } from '../../src/warehouse/cursors.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { useSandbox, useTempDir } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from './stream-compare.ts';

const day = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().slice(0, 10);

describe('reconcile adds the connection events the stream missed', () => {
  const sandbox = useSandbox({ seed: 13, users: 3, days: 5, pokeIntervalMs: 100 });
  const db = useTestDatabase();
  const dir = useTempDir('validic-reconcile-');

  const storedEvents = async () =>
    (
      await sql<{
        n: number;
      }>`select count(*)::int as n from validic.connection_events where org_id = ${sandbox.orgId}`.execute(
        db.warehouse.db,
      )
    ).rows[0]!.n;

  it('counts and adds what the stream missed, once', async () => {
    const config = await dir.writeJson('config.json', {
      stream: { staleAfterMs: 3000, gapAfterMs: 60_000, batchMaxWaitMs: 50, backoffBaseMs: 20 },
      organizations: [{ stream: { name: 'measurements-only', resources: ['measurement'] } }],
    });
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config });
    const fromSeq = sandbox.truth.events().length;
    const cli = spawnCli(['stream', '--exit-when-idle', '2'], env);
    await waitForStep(
      'the stream to have one member',
      () => expect(sandbox.truth.streams()[0]?.members).toBe(1),
      { timeout: 20_000, interval: 20 },
    );
    const [first, second] = sandbox.truth.users();
    sandbox.control.addRecord({ uid: first!.uid, type: 'measurement' });
    sandbox.control.connectSource(first!.uid, 'garmin');
    sandbox.control.connectSource(second!.uid, 'fitbit');
    sandbox.control.disconnectSource(second!.uid, 'fitbit');
    sandbox.control.addRecord({ uid: second!.uid, type: 'measurement' });
    const streamed = await cli.result;
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(
      await compareStreamWithTruth(db.warehouse, sandbox, fromSeq, {
        recordTypes: ['measurement'],
        connections: false,
      }),
    ).toEqual(NO_STREAM_DIFFERENCES);
    expect(await storedEvents()).toBe(0);

    // 40 days: two windows of at most 30 days.
    const from = day(40 * 86_400_000);
    const to = day(0);
    const expected = sandbox.truth
      .connections()
      .filter((e) => e.created_at.slice(0, 10) >= from && e.created_at.slice(0, 10) <= to).length;
    expect(expected).toBeGreaterThanOrEqual(3);

    const reconciled = await runCli(['reconcile', '--from', from, '--to', to], env);
    expect(reconciled.stderr).not.toContain(sandbox.token);
    expect(reconciled.code, reconciled.stderr).toBe(0);
    expect(reconciled.stdout).toContain(`windows 2`);
    expect(reconciled.stdout).toContain(
      `connection events seen ${expected}, added ${expected}, of which missed by the stream 0`,
    );
    expect(await storedEvents()).toBe(expected);
    expect(await readCursor(db.warehouse.db, sandbox.orgId, reconcileLastCursor())).toMatchObject({
      startDate: from,
      endDate: to,
      events: expected,
      missed: 0,
    });

    const again = await runCli(['reconcile', '--from', from, '--to', to], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`connection events seen ${expected}, added 0`);
    expect(await readCursor(db.warehouse.db, sandbox.orgId, reconcileLastCursor())).toMatchObject({
      missed: 0,
    });
  });

  it('counts as missed only what was created while a stream carrying events delivered', async () => {
    // A stream that carries connection events ran from 20 days ago and committed through 5 days ago (its
    // cursor, as a crashed process left it); the warehouse holds no event.
    const stream = await dir.writeJson('config-all.json', {
      organizations: [{ stream: { name: 'everything', reconcile: false } }],
    });
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: stream });
    await sql`delete from validic.connection_events where org_id = ${sandbox.orgId}`.execute(db.warehouse.db);
    const since = Date.now() - 20 * 86_400_000;
    const through = Date.now() - 5 * 86_400_000;
    await applyBatch(
      db.warehouse,
      { orgId: sandbox.orgId, arrivedVia: 'stream', items: [] },
      {
        cursors: [
          streamCursor('everything', 0).write({
            connectedSince: new Date(since).toISOString(),
            newestCreatedAt: new Date(through).toISOString(),
            lastLiveAt: new Date(through).toISOString(),
          }),
        ],
      },
    );
    const from = day(40 * 86_400_000);
    const to = day(0);
    const inRange = sandbox.truth
      .connections()
      .filter((e) => e.created_at.slice(0, 10) >= from && e.created_at.slice(0, 10) <= to);
    const lost = inRange.filter((e) => {
      const created = Date.parse(e.created_at);
      return created >= since && created <= through - 2_000;
    }).length;
    expect(lost).toBeGreaterThan(0);
    expect(lost).toBeLessThan(inRange.length);

    const reconciled = await runCli(['reconcile', '--from', from, '--to', to], env);
    expect(reconciled.code, reconciled.stderr).toBe(0);
    expect(reconciled.stdout).toContain(
      `connection events seen ${inRange.length}, added ${inRange.length}, of which missed by the stream ${lost}`,
    );
    expect(await readCursor(db.warehouse.db, sandbox.orgId, reconcileLastCursor())).toMatchObject({
      events: inRange.length,
      missed: lost,
    });
  });
});
