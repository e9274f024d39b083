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
import { describe, expect, it, vi } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from '../e2e/stream-compare.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { recordFaultRun } from './fault-results.ts';
import { seededRandom } from './oracle.ts';
import { inScenario, timeOfDayAnchor } from './scenario.ts';

const KILL_RUNS = Number(process.env.FAULT_KILL_RUNS ?? 4);
const PRIMARY = 'validic-sync';

interface Version {
  checksum: string;
  createdAt: number;
}

/** What the warehouse holds: each record's stored version, and the connection events. */
async function warehouseState(db: Parameters<typeof compareStreamWithTruth>[0], orgId: string) {
  const records = await sql<{ id: string; checksum: string; created_at: Date }>`
    select id, checksum, created_at from validic.records where org_id = ${orgId}`.execute(db.db);
  const events = await sql<{ id: string }>`
    select id from validic.connection_events where org_id = ${orgId}`.execute(db.db);
  const versions = new Map<string, Version>();
  for (const r of records.rows)
    versions.set(r.id, { checksum: r.checksum, createdAt: new Date(r.created_at).getTime() });
  return { versions, events: new Set(events.rows.map((e) => e.id)) };
}

type LogEntry = ReturnType<Sandbox['truth']['events']>[number];

/**
 * Applies log events to a warehouse state the way the platform's rule says a warehouse must (the later
 * `created_at` wins; the same version is no change; connection events are immutable), and counts what
 * inserted or changed something: for the pass's events, what the primary had missed.
 */
function apply(state: Awaited<ReturnType<typeof warehouseState>>, events: LogEntry[]): number {
  let changed = 0;
  for (const e of events) {
    const p = e.payload as { id: string; checksum?: string; created_at: string };
    if (e.kind === 'connection') {
      if (!state.events.has(p.id)) {
        state.events.add(p.id);
        changed += 1;
      }
      continue;
    }
    const incoming = { checksum: String(p.checksum), createdAt: Date.parse(p.created_at) };
    const stored = state.versions.get(p.id);
    if (!stored || (stored.checksum !== incoming.checksum && incoming.createdAt > stored.createdAt)) {
      state.versions.set(p.id, incoming);
      changed += 1;
    }
  }
  return changed;
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
      await vi.waitFor(
        () => {
          expect(sandbox.truth.streams()).toHaveLength(2);
          expect(sandbox.truth.streams()[0]?.members).toBeGreaterThan(0);
        },
        { timeout: 30_000, interval: 20 },
      );
      // Both streams exist: the primary (created first) and the reconciliation stream.
      const reconcileFrom = sandbox.truth.streams()[1]!.cursor;
      sandbox.control.startLiveFeed({ ratePerSecond: 40 + Math.floor(random() * 80) });
      await vi.waitFor(
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
      sandbox.control.stopLiveFeed();
      const sent = sandbox.truth.streams()[0]!.cursor;

      // The oracle: the warehouse as the killed process left it, then what the restarted primary
      // delivers (everything the platform had not sent), then the pass (everything since the
      // reconciliation stream was created). What the pass changes is what the primary lost.
      const state = await warehouseState(db.warehouse, sandbox.orgId);
      const log = sandbox.truth.events();
      const lostBefore = apply(
        structuredClone(state),
        log.filter((e) => e.seq >= fromSeq && e.seq < sent),
      );
      apply(
        state,
        log.filter((e) => e.seq >= sent),
      );
      const expectedMissed = apply(
        state,
        log.filter((e) => e.seq >= reconcileFrom),
      );

      const second = await runCli(['stream', '--exit-when-idle', '3'], env);
      expect(second.code, second.stderr.slice(-3000)).toBe(0);
      expect(second.stdout).toMatch(/REST backfills enqueued 0\n/);
      const passes = [
        ...second.stdout.matchAll(
          /reconciliation pass \d+ on [^:]+: caught-up .*missed by the stream (\d+)/g,
        ),
      ];
      expect(passes.length, second.stdout).toBeGreaterThanOrEqual(1);
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
        `stream-sigkill run ${run}: lost by the killed stream ${lostBefore} events, the pass reported ${missed} (expected ${expectedMissed})`,
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
