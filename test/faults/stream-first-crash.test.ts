/**
 * The primary stream SIGKILLed moments after its first frames, before any reconciliation pass ran, at
 * 1,200 users: the crash's gap starts where the stream's delivery began, before the reconciliation
 * stream existed, so that stream cannot reach it. It must be delivered again by the provider's replay (one
 * request), not by a REST backfill of the whole organization (thousands of requests, hours of budget).
 * Again with 4 other streams on the account (the platform allows 5): no reconciliation stream can be had at
 * all, and the replay still delivers. Every run: nothing lost, no `records.backfill` queued,
 * `stream --exit-when-idle 8` exits (its hang guard is 150 s; before, it ran a REST backfill for hours),
 * and `reconcile` exits 0 (at the stream limit it says the replay delivered instead).
 *
 * `FAULT_FIRST_CRASH_RUNS` sets the runs of each case (default 1).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from '../e2e/stream-compare.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { recordFaultRun } from './fault-results.ts';
import { seededRandom, waitForSessionsToEnd } from './oracle.ts';
import { inScenario, timeOfDayAnchor } from './scenario.ts';

const RUNS = Number(process.env.FAULT_FIRST_CRASH_RUNS ?? 1);

type NewStreamStart = 'creation' | 'start-of-day';

describe('fault stream-first-crash', () => {
  // Where a new stream's backlog starts is not documented: at its creation, or at midnight of that day.
  for (const [otherStreams, newStreamStart] of [
    [0, 'creation'],
    [0, 'start-of-day'],
    [4, 'creation'],
  ] as const) {
    it(
      `a primary SIGKILLed before any pass, 1,200 users, ${otherStreams} other streams, new streams start at ${newStreamStart}: no REST, ${RUNS} seeded runs`,
      async () => {
        for (let run = 0; run < RUNS; run++) await crashRun(otherStreams, newStreamStart, run);
      },
      RUNS * 300_000,
    );
  }
});

async function crashRun(otherStreams: number, newStreamStart: NewStreamStart, run: number): Promise<void> {
  const seed = 3_100 + otherStreams * 10 + (newStreamStart === 'creation' ? 0 : 5) + run;
  const random = seededRandom(seed);
  await inScenario(
    { seed, users: 1_200, days: 2, newStreamStart, now: new Date(timeOfDayAnchor(run + 1)) },
    async ({ sandbox, db, onCleanup }) => {
      const dir = mkdtempSync(join(tmpdir(), 'validic-fault-first-crash-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ organizations: [{ stream: { connections: 1 } }] }));
      const env = sandboxEnv(sandbox, {
        DATABASE_URL: db.url,
        VALIDIC_SYNC_CONFIG: config,
        LOG_LEVEL: 'info',
      });
      for (let i = 0; i < otherStreams; i++) {
        const res = await fetch(`${sandbox.streamsUrl}/streams?token=${sandbox.token}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: `someone-else-${i}` }),
        });
        expect(res.status).toBeLessThan(300);
      }
      const first = spawnCli(['stream'], env);
      onCleanup(() => first.kill('SIGKILL'));
      // What the stream carries: from its creation, or (the other reading) from midnight of that day; what
      // came before is the first recent poll's, not the stream's.
      await waitForStep(
        'the primary stream created',
        () => expect(sandbox.truth.streams().length).toBeGreaterThan(otherStreams),
        { timeout: 60_000, interval: 5 },
      );
      const midnight = Date.parse(`${sandbox.control.now().slice(0, 10)}T00:00:00Z`);
      const fromSeq =
        newStreamStart === 'creation'
          ? sandbox.truth.events().length
          : (sandbox.truth.events().find((e) => Date.parse(e.created_at) >= midnight)?.seq ??
            sandbox.truth.events().length);
      sandbox.control.startLiveFeed({ ratePerSecond: 200 });
      await waitForStep(
        'the primary connected',
        () => expect(sandbox.truth.streams().some((s) => s.members > 0)).toBe(true),
        { timeout: 60_000, interval: 10 },
      );
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(random() * 1_400)));
      first.kill('SIGKILL');
      await first.result;
      await waitForSessionsToEnd(db.warehouse.db, first.pid);
      sandbox.control.stopLiveFeed();

      const started = Date.now();
      const second = await runCli(['stream', '--exit-when-idle', '8'], env, { timeoutMs: 150_000 });
      const seconds = (Date.now() - started) / 1000;
      expect(second.code, second.stderr.slice(-3000)).toBe(0);
      expect(second.stdout).toMatch(/REST backfills enqueued 0\n/);
      // Without a reconciliation stream only the replay can deliver the crash's gap; with one, its pass
      // does when the gap starts after its creation (the stream committed something first).
      if (otherStreams === 4) expect(second.stdout).toMatch(/gap replay \d+ from \S+: caught-up/);
      else
        expect(second.stdout).toMatch(/(gap replay \d+ from \S+|reconciliation pass \d+ on \S+): caught-up/);
      const reconcile = await runCli(['reconcile', '--from', 'today', '--to', 'today'], env, {
        timeoutMs: 150_000,
      });
      expect(reconcile.code, reconcile.stderr.slice(-3000)).toBe(0);
      if (otherStreams === 4)
        expect(reconcile.stdout).toMatch(/unavailable .*the provider's replay delivers/);
      const backfills = await sql<{ n: number }>`
        select count(*)::int as n from validic_sync.runs where command = 'backfill'`.execute(db.warehouse.db);
      expect(backfills.rows[0]!.n).toBe(0);
      const diff = await compareStreamWithTruth(db.warehouse, sandbox, fromSeq);
      const log = sandbox.truth.events().filter((e) => e.seq >= fromSeq);
      recordFaultRun('stream-first-crash', {
        records: new Set(log.map((e) => (e.payload as { id: string }).id)).size,
        missing: diff.missingRecords.length + diff.missingConnectionEvents.length,
        duplicated: diff.duplicateKeys + diff.unknownRecords.length,
        regressed: diff.wrongVersion.length + diff.wrongDeleted.length,
      });
      console.log(
        `stream-first-crash (${otherStreams} other streams) run ${run}: the restarted stream exited after ${seconds.toFixed(1)} s`,
      );
      expect(diff, second.stdout).toEqual(NO_STREAM_DIFFERENCES);
      const open = await sql<{ n: number }>`
        select count(*)::int as n from validic_sync.stream_gaps where covered_at is null`.execute(
        db.warehouse.db,
      );
      expect(open.rows[0]!.n).toBe(0);
    },
  );
}
