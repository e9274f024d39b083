/**
 * The reconciliation stream closes what the primary stream loses (issue "Nothing lost between the
 * platform's checkpoint and ours"). The sandbox's stream checkpoint moves with what it SENT and re-sends
 * nothing after a reconnect (`redeliverCount: 0`), as the platform promises no more.
 *
 * - `stream-sigkill`: `validic-sync stream` is SIGKILLed at a seeded moment while the live feed runs
 *   (frames it had received but not committed are gone from the stream), then started again with
 *   `--exit-when-idle`: it finds the crash in its checkpoint, records the gap, and runs one pass of the
 *   reconciliation stream once the primary has caught up. Every run must end with the warehouse equal
 *   to the truth, and the pass's "missed by the stream" must equal what an independent replay of the
 *   sandbox's event log over the warehouse as the killed process left it says the pass had to add.
 * - `stream-quiet-replay`: a quiet organization, started again more than `gapAfterMs` after its last
 *   event: the start-up replay can never hand off (nothing was created after T). It must give up when
 *   the pokes say nothing more flows (not after `replayTimeoutMs`), leave its gap to the reconciliation
 *   stream (no REST backfill), and the pass must cover it.
 *
 * `FAULT_KILL_RUNS` sets the SIGKILL runs (default 4; the bar is 20).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from '../e2e/stream-compare.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { recordFaultRun } from './fault-results.ts';
import { seededRandom, waitForBothStreams, waitForSessionsToEnd } from './oracle.ts';
import { inScenario, timeOfDayAnchor } from './scenario.ts';

const KILL_RUNS = Number(process.env.FAULT_KILL_RUNS ?? 4);

/** Every record version (current or kept as an older one) and connection event the warehouse holds. */
async function warehouseHolds(
  db: Parameters<typeof compareStreamWithTruth>[0],
  orgId: string,
): Promise<Set<string>> {
  const { rows } = await sql<{ key: string }>`
    select id || ':' || checksum as key from validic.records where org_id = ${orgId}
    union select record_id || ':' || checksum from validic.record_versions where org_id = ${orgId}
    union select 'event:' || id from validic.connection_events where org_id = ${orgId}`.execute(db.db);
  return new Set(rows.map((r) => r.key));
}

type LogEntry = ReturnType<Sandbox['truth']['events']>[number];

const keyOf = (e: LogEntry): string => {
  const p = e.payload as { id: string; checksum?: string };
  return e.kind === 'connection' ? `event:${p.id}` : `${p.id}:${p.checksum}`;
};

/** Adds the events to what the warehouse holds; returns how many of them it did not hold yet. */
function add(holds: Set<string>, events: LogEntry[]): number {
  let added = 0;
  for (const e of events) {
    const key = keyOf(e);
    if (holds.has(key)) continue;
    holds.add(key);
    added += 1;
  }
  return added;
}

function writeConfig(dir: string, config: unknown): string {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

describe('fault stream-sigkill', () => {
  it(
    `the reconciliation pass re-delivers exactly what a killed stream lost, ${KILL_RUNS} seeded runs`,
    async () => {
      for (let run = 0; run < KILL_RUNS; run++) await killRun(run);
    },
    KILL_RUNS * 120_000,
  );
});

async function killRun(run: number): Promise<void> {
  const random = seededRandom(7_100 + run * 31);
  await inScenario(
    { seed: 1_200 + run, users: 4, days: 2, pokeIntervalMs: 200, now: new Date(timeOfDayAnchor(run)) },
    async ({ sandbox, db, onCleanup }) => {
      const dir = mkdtempSync(join(tmpdir(), 'validic-fault-kill-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      const config = writeConfig(dir, { organizations: [{ stream: { connections: 1 + (run % 2) } }] });
      const env = sandboxEnv(sandbox, {
        DATABASE_URL: db.url,
        VALIDIC_SYNC_CONFIG: config,
        LOG_LEVEL: 'info',
      });
      const fromSeq = sandbox.truth.events().length;

      const first = spawnCli(['stream'], env);
      onCleanup(() => first.kill('SIGKILL'));
      await waitForBothStreams(sandbox);
      // Both streams exist: the primary (created first) and the reconciliation stream.
      const reconcileFrom = sandbox.truth.streams()[1]!.cursor;
      sandbox.control.startLiveFeed({ ratePerSecond: 40 + Math.floor(random() * 80) });
      await waitForStep(
        'the first records stored',
        async () => {
          const n = await sql<{ n: number }>`select count(*)::int as n from validic.records`.execute(
            db.warehouse.db,
          );
          expect(n.rows[0]!.n).toBeGreaterThan(0);
        },
        { timeout: 30_000, interval: 50 },
      );
      // A seeded moment inside the micro-batch rhythm (250 ms) and the pipelined write.
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(random() * 1_400)));
      first.kill('SIGKILL');
      await first.result;
      // What the killed process committed is what its sessions committed, the last COMMIT included.
      await waitForSessionsToEnd(db.warehouse.db, first.pid);
      sandbox.control.stopLiveFeed();
      const sent = sandbox.truth.streams()[0]!.cursor;

      // The oracle: the versions the warehouse holds as the killed process left it, then what the
      // restarted primary delivers (everything the platform had not sent), then the pass (everything
      // since the reconciliation stream was created): the versions it brings that the warehouse does
      // not hold by then are what the killed primary lost.
      const holds = await warehouseHolds(db.warehouse, sandbox.orgId);
      const log = sandbox.truth.events();
      const lost = add(
        new Set(holds),
        log.filter((e) => e.seq >= fromSeq && e.seq < sent),
      );
      add(
        holds,
        log.filter((e) => e.seq >= sent),
      );
      const expectedMissed = add(
        holds,
        log.filter((e) => e.seq >= reconcileFrom),
      );
      expect(expectedMissed).toBe(lost);

      const second = await runCli(['stream', '--exit-when-idle', '3'], env);
      expect(second.code, second.stderr.slice(-3000)).toBe(0);
      expect(second.stdout).toMatch(/REST backfills enqueued 0\n/);
      const passes = [
        ...second.stdout.matchAll(
          /reconciliation pass \d+ on [^:]+: caught-up .*missed by the stream (\d+)/g,
        ),
      ];
      const passLog = second.stderr
        .split('\n')
        .filter((l) => /reconciliation/.test(l))
        .join('\n');
      expect(passes.length, `${second.stdout}\n${passLog}`).toBeGreaterThanOrEqual(1);
      const missed = passes.reduce((sum, m) => sum + Number(m[1]), 0);
      const diff = await compareStreamWithTruth(db.warehouse, sandbox, fromSeq);
      recordFaultRun('stream-sigkill', {
        records: new Set(log.filter((e) => e.seq >= fromSeq).map((e) => (e.payload as { id: string }).id))
          .size,
        missing: diff.missingRecords.length + diff.missingConnectionEvents.length,
        duplicated: diff.duplicateKeys + diff.unknownRecords.length,
        regressed: diff.wrongVersion.length + diff.wrongDeleted.length,
      });
      console.log(
        `stream-sigkill run ${run}: the killed stream lost ${lost} record versions and events, the pass reported ${missed}`,
      );
      expect(diff, second.stdout).toEqual(NO_STREAM_DIFFERENCES);
      expect(missed, second.stdout).toBe(expectedMissed);
      // Every gap recorded (the crash) is covered by the pass.
      const open = await sql<{ n: number }>`
        select count(*)::int as n from validic_sync.stream_gaps where covered_at is null`.execute(
        db.warehouse.db,
      );
      expect(open.rows[0]!.n).toBe(0);
    },
  );
}

describe('fault stream-quiet-replay', () => {
  it('a replay that cannot hand off in a quiet organization leaves its gap to the reconciliation stream', async () => {
    await inScenario(
      // The platform's own rhythm: a poke every 5 s.
      { seed: 1_300, users: 3, days: 2, now: new Date(timeOfDayAnchor(3)) },
      async ({ sandbox, db, onCleanup }) => {
        const dir = mkdtempSync(join(tmpdir(), 'validic-fault-quiet-'));
        onCleanup(() => rmSync(dir, { recursive: true, force: true }));
        const gapAfterMs = 3_000;
        const config = writeConfig(dir, { stream: { gapAfterMs } });
        const env = sandboxEnv(sandbox, {
          DATABASE_URL: db.url,
          VALIDIC_SYNC_CONFIG: config,
          LOG_LEVEL: 'info',
        });
        const fromSeq = sandbox.truth.events().length;
        // The first run creates both streams and stops idle; nothing happens afterwards.
        const first = await runCli(['stream', '--exit-when-idle', '6'], env);
        expect(first.code, first.stderr.slice(-3000)).toBe(0);
        await new Promise((resolve) => setTimeout(resolve, gapAfterMs + 1_000));

        const started = Date.now();
        const second = await runCli(['stream', '--exit-when-idle', '8'], env);
        const seconds = (Date.now() - started) / 1000;
        console.log(`stream-quiet-replay: the second run exited after ${seconds.toFixed(1)} s`);
        expect(second.code, second.stderr.slice(-3000)).toBe(0);
        expect(second.stdout).toMatch(/idle for 8 s/);
        expect(second.stdout).toMatch(/REST backfills enqueued 0\n/);
        // The replay gave up on the pokes (not on its 10-minute timeout), and its gap was left to and
        // covered by a reconciliation pass.
        const gaps = await sql<{ reason: string; handled_by: string; covered_at: Date | null }>`
          select reason, handled_by, covered_at from validic_sync.stream_gaps`.execute(db.warehouse.db);
        expect(gaps.rows.map((g) => g.reason)).toContain('replay-quiet');
        expect(gaps.rows.every((g) => g.handled_by === 'reconcile' && g.covered_at !== null)).toBe(true);
        expect(second.stdout).toMatch(/reconciliation pass \d+ on [^:]+: caught-up/);
        const backfills = await sql<{ n: number }>`
          select count(*)::int as n from validic_sync.runs where command = 'backfill'`.execute(
          db.warehouse.db,
        );
        expect(backfills.rows[0]!.n).toBe(0);
        const diff = await compareStreamWithTruth(db.warehouse, sandbox, fromSeq);
        expect(diff).toEqual(NO_STREAM_DIFFERENCES);
        recordFaultRun('stream-quiet-replay', { records: 0, missing: 0, duplicated: 0, regressed: 0 });
      },
    );
  }, 240_000);
});
