/**
 * The stream in a fleet: three workers, one stream connection allowed (`stream.connections` 1), so
 * exactly one worker holds the stream slot while the platform produces data live. That worker is
 * SIGKILLed in the middle of its micro-batches; its slot lapses, another worker takes it over and
 * resumes from the slot's committed checkpoint (replaying the downtime), and the warehouse ends equal
 * to the truth with no duplicates. The sandbox never sees more than one connection at a time.
 *
 * What the holder had read and not committed when it died is gone from the primary stream (the
 * platform's checkpoint moved when it sent it), and the takeover's replay hands off at the newest
 * committed `created_at`, as the provider's recipe says: that window is a `crash` gap, and the
 * reconciliation pass the gap asks for re-delivers it (src/stream/README.md, "Gaps"). The test waits for
 * that pass (3 s after the gap here, a minute by default) and for every gap to be covered.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createStreamSlots } from '../../src/worker/stream-supervisor.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, TEST_REDIS_URL, type TestRedis } from '../helpers/redis.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { startWorkerChild, type WorkerChild } from '../helpers/worker-fleet.ts';

describe('stream slot handover in a fleet', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let testRedis: TestRedis;
  let configDir: string;
  const workers: WorkerChild[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 41, users: 3, days: 3, pokeIntervalMs: 500 });
    db = await createTestDatabase();
    testRedis = createTestRedis('stream-handover');
    configDir = await mkdtemp(join(tmpdir(), 'validic-sync-fleet-'));
  });
  afterAll(async () => {
    sandbox?.control.stopLiveFeed();
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.child.result));
    await testRedis?.cleanup();
    await sandbox?.close();
    await db?.drop();
    await rm(configDir, { recursive: true, force: true });
  });

  const streamRecords = async () => {
    const r = await sql<{ n: number }>`
      select count(*)::int as n from validic.records where arrived_via in ('stream', 'replay')`.execute(
      db.warehouse.db,
    );
    return r.rows[0]!.n;
  };

  const openGaps = async () => {
    const r = await sql<{ reason: string; from: string }>`
      select reason, gap_from::text as from from validic_sync.stream_gaps where covered_at is null`.execute(
      db.warehouse.db,
    );
    return r.rows;
  };

  it('hands the slot to another worker when its holder dies, losing nothing', async () => {
    const prefix = testRedis.prefix.slice(0, -1);
    const configFile = join(configDir, 'config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        worker: { streamSlotTtlMs: 1500 },
        // Any downtime longer than half a second is replayed from the slot's checkpoint.
        // The crash gap's reconciliation pass 3 s after the gap, not the default minute: the gap's end is
        // an estimate up to CLOCK_ESTIMATE_TOLERANCE_MS (2 s) late, and a pass covers it only when it
        // reads up to a later time than that (a pass after 1 s covered it only when it started late).
        stream: { gapAfterMs: 500, staleAfterMs: 5000, batchMaxWaitMs: 200, passAfterGapSeconds: 3 },
        organizations: [],
      }),
    );
    const env = sandboxEnv(sandbox, {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      VALIDIC_REDIS_PREFIX: prefix,
      VALIDIC_SYNC_CONFIG: configFile,
      HTTP_PORT: '0',
      VALIDIC_SCHEDULES: 'false',
    });

    // What existed before the stream: a backfill (inline, the one-shot command).
    const backfill = await runCli(['backfill', '--from', day(25), '--to', day(0)], env);
    expect(backfill.code, backfill.stderr).toBe(0);

    workers.push(...(await Promise.all([0, 1, 2].map(() => startWorkerChild(env)))));
    const slots = createStreamSlots({ redis: testRedis.connect(), prefix });
    const holderPid = async () => {
      const holders = await slots.holders(sandbox.orgId, 'validic-sync');
      expect(Object.keys(holders)).toEqual(['0']);
      return Number(holders[0]!.split('-')[0]);
    };
    const firstPid = await waitForStep('one worker to hold the stream slot', holderPid, {
      timeout: 20_000,
      interval: 50,
    });
    const holder = workers.find((w) => w.child.pid === firstPid)!;
    expect(holder).toBeDefined();

    sandbox.control.startLiveFeed({ ratePerSecond: 40 });
    await waitForStep(
      '30 stream records stored',
      async () => expect(await streamRecords()).toBeGreaterThanOrEqual(30),
      { timeout: 30_000, interval: 50 },
    );
    holder.child.kill('SIGKILL');
    await holder.child.result;

    const nextPid = await waitForStep(
      'another worker to take the stream slot',
      async () => {
        const pid = await holderPid();
        expect(pid).not.toBe(firstPid);
        return pid;
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(workers.some((w) => w.child.pid === nextPid)).toBe(true);
    const atTakeover = await streamRecords();
    await waitForStep(
      'over 30 more stream records after the takeover',
      async () => expect(await streamRecords()).toBeGreaterThan(atTakeover + 30),
      { timeout: 30_000, interval: 50 },
    );
    sandbox.control.stopLiveFeed();

    await waitForStep(
      'the reconciliation pass to cover every gap',
      async () => expect(await openGaps()).toEqual([]),
      { timeout: 60_000, interval: 250 },
    );
    await waitForStep(
      'the warehouse to match the truth',
      async () => expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES),
      { timeout: 30_000, interval: 250 },
    );
    // Never more than one connection at a time, fleet-wide: the platform refused none.
    expect(workers.map((w) => w.stderr()).join('\n')).not.toMatch(/max client connections exceeded/);

    const survivors = workers.filter((w) => w !== holder);
    for (const result of await Promise.all(survivors.map((w) => w.stop()))) {
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
    }
  }, 180_000);
});
