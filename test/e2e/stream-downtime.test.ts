/**
 * Downtime: the real CLI streams, is stopped with Ctrl-C (graceful: flush, checkpoint, exit 0), the
 * platform changes while it is down, and the next start replays from the disconnect (replay sending
 * older versions after newer ones, as the `replayOlderVersions` fault does) before the stream resumes.
 * The warehouse ends equal to the truth, and no record regresses to an older checksum.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { readCursor, streamCursor } from '../../src/warehouse/cursors.ts';
import { sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { useSandbox, useTempDir } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from './stream-compare.ts';

const STREAM = { staleAfterMs: 3000, batchMaxWaitMs: 50, backoffBaseMs: 20, backoffCapMs: 300 };

describe('stream downtime is filled by replay', () => {
  const sandbox = useSandbox({
    seed: 12,
    users: 4,
    days: 3,
    pokeIntervalMs: 100,
    faults: { replayOlderVersions: true, unknownEventRate: 0.1 },
  });
  const db = useTestDatabase();
  const dir = useTempDir('validic-stream-');

  const configFile = (name: string, stream: Record<string, number>) =>
    dir.writeJson(name, { stream: { ...STREAM, ...stream } });

  const storedCount = async () =>
    (
      await sql<{
        n: number;
      }>`select count(*)::int as n from validic.records where org_id = ${sandbox.orgId}`.execute(
        db.warehouse.db,
      )
    ).rows[0]!.n;

  it('stops gracefully, then replays the gap at the next start without regressing any record', async () => {
    const env = (config: string) =>
      sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config });
    const fromSeq = sandbox.truth.events().length;
    const uid = sandbox.truth.users()[0]!.uid;

    // Run 1: stream live data, then Ctrl-C.
    const first = spawnCli(['stream'], env(await configFile('live.json', { gapAfterMs: 60_000 })));
    await waitForStep(
      'the stream to have one member',
      () => expect(sandbox.truth.streams()[0]?.members).toBe(1),
      { timeout: 20_000, interval: 20 },
    );
    const early = [1, 2, 3].map(() => sandbox.control.addRecord({ uid, type: 'measurement' }));
    sandbox.control.startLiveFeed({ ratePerSecond: 40 });
    await waitForStep(
      'over 60 live feed events',
      () => expect(sandbox.truth.events().length - fromSeq).toBeGreaterThan(60),
      { timeout: 20_000, interval: 50 },
    );
    sandbox.control.stopLiveFeed();
    for (const r of early) sandbox.control.updateRecord(r.id);
    await waitForStep(
      'the warehouse to match the streamed events',
      async () =>
        expect(await compareStreamWithTruth(db.warehouse, sandbox, fromSeq)).toEqual(NO_STREAM_DIFFERENCES),
      { timeout: 20_000, interval: 100 },
    );
    // Stop after the pokes that follow the last data (every 100 ms of quiet here): a clean stop, with
    // the platform's clock known from a poke. A Ctrl-C before any poke is an unclean stop whose clock
    // comes from the `Date` header (whole seconds): the replay's T may then fall after the records
    // created during the downtime, and the replay gives its gap to the reconciliation stream instead
    // of handing off (no loss, but not what this test is about).
    await new Promise((resolve) => setTimeout(resolve, 500));
    first.kill('SIGINT');
    const stopped = await first.result;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toMatch(/interrupted after/);
    const checkpoint = await readCursor(db.warehouse.db, sandbox.orgId, streamCursor('validic-sync', 0));
    expect(checkpoint?.lastDisconnectAt).toEqual(expect.any(String));
    const before = await storedCount();

    // Down: the platform changes. A second later than the stop at least: before a poke, the replay's
    // hand-off time T is known from the `Date` header's whole seconds (±500 ms), and events created
    // inside that uncertainty may fall before T; the replay then leaves its gap to the reconciliation
    // stream (nothing is lost either way, but this test is about the hand-off).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const added = [1, 2, 3, 4, 5].map(() => sandbox.control.addRecord({ uid, type: 'measurement' }));
    const changed = [...early.slice(0, 2), added[4]!].map((r) => sandbox.control.updateRecord(r.id));
    sandbox.control.connectSource(uid, 'garmin');

    // Run 2: any downtime counts as a gap here, so the start-up replays before the stream resumes.
    const second = await spawnCli(
      ['stream', '--exit-when-idle', '2'],
      env(await configFile('gap.json', { gapAfterMs: 1 })),
    ).result;
    expect(second.stderr).not.toContain(sandbox.token);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/replays [1-9]\d* \(caught up [1-9]/);
    // Replay re-sent versions older than the stored ones: kept aside as stale, never applied.
    expect(second.stdout).toMatch(/stale [1-9]/);

    expect(await compareStreamWithTruth(db.warehouse, sandbox, fromSeq)).toEqual(NO_STREAM_DIFFERENCES);
    expect(await storedCount()).toBeGreaterThanOrEqual(before + added.length);
    // The replay ran up to the first event created after the disconnect (the provider's recipe); the
    // stream, resuming from its own checkpoint, brought the rest.
    const replayed = await sql<{ id: string }>`
      select id from validic.records where id = ${added[0]!.id} and arrived_via = 'replay'`.execute(
      db.warehouse.db,
    );
    expect(replayed.rows).toHaveLength(1);

    // No regression: current checksums are the truth's newest; older ones sit in record_versions.
    const truth = new Map(sandbox.truth.records().map((r) => [r.id, r.checksum]));
    const { rows } = await sql<{ id: string; checksum: string; versions: string[] }>`
      select r.id, r.checksum, coalesce(array_agg(v.checksum) filter (where v.checksum is not null), '{}') as versions
      from validic.records r left join validic.record_versions v on v.org_id = r.org_id and v.record_id = r.id
      where r.id in (${sql.join([...early, ...changed].map((r) => r.id))})
      group by r.id, r.checksum`.execute(db.warehouse.db);
    expect(rows).toHaveLength(new Set([...early, ...changed].map((r) => r.id)).size);
    for (const row of rows) {
      expect(row.checksum).toBe(truth.get(row.id));
      expect(row.versions.length).toBeGreaterThanOrEqual(1);
      expect(row.versions).not.toContain(row.checksum);
    }
  });
});
