/**
 * A net that is itself cut: the reconciliation pass that was to re-deliver what a SIGKILLed primary lost is
 * cut in its turn (SIGTERM, as in a rolling deploy, or SIGKILL) at a seeded moment while it reads the
 * reconciliation stream's backlog. The sandbox re-sends nothing after a reconnect (`redeliverCount: 0`), and
 * the reconciliation stream's position moved with what it SENT: what the cut pass had been sent and had not
 * committed is gone from that stream too. Then `stream --exit-when-idle` runs again.
 *
 * Every run must end with the warehouse equal to the sandbox's truth and no gap open, and while anything is
 * missing `status --json` must show an open gap (it must never say all is well while data is missing).
 *
 * `FAULT_PASS_CUT_RUNS` sets the runs of each signal (default 2; the bar is 20 of each).
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
import { seededRandom, waitForBothStreams, waitForSessionsToEnd } from './oracle.ts';
import { inScenario, timeOfDayAnchor } from './scenario.ts';

const RUNS = Number(process.env.FAULT_PASS_CUT_RUNS ?? 2);

describe('fault stream-pass-cut', () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(
      `a reconciliation pass cut by ${signal} after a SIGKILLed primary: nothing lost, a gap open while anything is missing, ${RUNS} seeded runs`,
      async () => {
        for (let run = 0; run < RUNS; run++) await cutRun(signal, run);
      },
      RUNS * 180_000,
    );
  }
});

async function openGapsInStatus(env: NodeJS.ProcessEnv): Promise<number> {
  const status = await runCli(['status', '--json'], env);
  expect(status.code, status.stderr.slice(-2000)).toBe(0);
  const orgs = (JSON.parse(status.stdout) as { orgs: { stream: { gaps: { open: number } } }[] }).orgs;
  return orgs.reduce((sum, org) => sum + org.stream.gaps.open, 0);
}

async function cutRun(signal: 'SIGTERM' | 'SIGKILL', run: number): Promise<void> {
  const seed = (signal === 'SIGTERM' ? 2_100 : 2_600) + run;
  const random = seededRandom(seed * 7);
  await inScenario(
    { seed, users: 4, days: 2, pokeIntervalMs: 200, now: new Date(timeOfDayAnchor(run)) },
    async ({ sandbox, db, onCleanup }) => {
      const dir = mkdtempSync(join(tmpdir(), 'validic-fault-pass-cut-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ organizations: [{ stream: { connections: 1 + (run % 2) } }] }));
      const env = sandboxEnv(sandbox, {
        DATABASE_URL: db.url,
        VALIDIC_SYNC_CONFIG: config,
        LOG_LEVEL: 'info',
      });
      const fromSeq = sandbox.truth.events().length;

      // The primary runs under a live feed while the reconciliation stream's backlog grows (no pass yet),
      // then is SIGKILLed: what it had received and not committed is gone from its stream.
      const first = spawnCli(['stream'], env);
      onCleanup(() => first.kill('SIGKILL'));
      await waitForBothStreams(sandbox);
      sandbox.control.startLiveFeed({ ratePerSecond: 300 });
      await new Promise((resolve) => setTimeout(resolve, 8_000 + Math.floor(random() * 4_000)));
      first.kill('SIGKILL');
      await first.result;
      sandbox.control.stopLiveFeed();
      await waitForSessionsToEnd(db.warehouse.db, first.pid);

      // The restart records the crash and runs a pass once caught up; the pass is cut while it reads.
      const second = spawnCli(['stream'], env);
      onCleanup(() => second.kill('SIGKILL'));
      await waitForStep(
        'a reconciliation pass running',
        async () => {
          const { rows } = await sql<{ n: number }>`
            select count(*)::int as n from validic_sync.reconcile_passes where outcome = 'running'`.execute(
            db.warehouse.db,
          );
          expect(rows[0]!.n).toBeGreaterThan(0);
        },
        { timeout: 90_000, interval: 20 },
      );
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 1_500)));
      second.kill(signal);
      const cut = await second.result;
      await waitForSessionsToEnd(db.warehouse.db, second.pid);

      const afterCut = await compareStreamWithTruth(db.warehouse, sandbox, fromSeq);
      const missing = afterCut.missingRecords.length + afterCut.missingConnectionEvents.length;
      const openAfterCut = await openGapsInStatus(env);
      console.log(
        `stream-pass-cut ${signal} run ${run}: after the cut ${missing} missing, ${openAfterCut} gaps open (exit ${cut.code ?? cut.signal})`,
      );
      if (missing > 0)
        expect(openAfterCut, 'status shows no open gap while data is missing').toBeGreaterThan(0);

      const third = await runCli(['stream', '--exit-when-idle', '3'], env, { timeoutMs: 150_000 });
      expect(third.code, third.stderr.slice(-3000)).toBe(0);
      expect(third.stdout).toMatch(/REST backfills enqueued 0\n/);
      const diff = await compareStreamWithTruth(db.warehouse, sandbox, fromSeq);
      const log = sandbox.truth.events().filter((e) => e.seq >= fromSeq);
      recordFaultRun('stream-pass-cut', {
        records: new Set(log.map((e) => (e.payload as { id: string }).id)).size,
        missing: diff.missingRecords.length + diff.missingConnectionEvents.length,
        duplicated: diff.duplicateKeys + diff.unknownRecords.length,
        regressed: diff.wrongVersion.length + diff.wrongDeleted.length,
      });
      expect(diff, third.stdout).toEqual(NO_STREAM_DIFFERENCES);
      expect(await openGapsInStatus(env), third.stdout).toBe(0);
      // No delivery row is left `running` by a process that is gone.
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from validic_sync.reconcile_passes where outcome = 'running'`.execute(
        db.warehouse.db,
      );
      expect(rows[0]!.n).toBe(0);
    },
  );
}
