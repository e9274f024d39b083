/**
 * The fault suite's oracle: the warehouse against the sandbox's truth (compare-with-truth.ts), reduced to
 * the three counts every run must bring to zero; around it what the fault tests share: a seeded PRNG, the
 * usual backfill range, the waits for the moment a fault strikes, and the re-run after a failed run.
 */
import { type Kysely, sql } from 'kysely';
import { expect } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { type Warehouse, warehouseApplicationName } from '../../src/warehouse/open-warehouse.ts';
import { compareStreamWithTruth, type StreamDifferences } from '../e2e/stream-compare.ts';
import { ledgerProgress } from '../helpers/backfill-progress.ts';
import { compareWithTruth, type Differences } from '../helpers/compare-with-truth.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import type { RunCounts } from './fault-results.ts';

export async function countAgainstTruth(
  warehouse: Warehouse,
  sandbox: Sandbox,
): Promise<RunCounts & { differences: Differences }> {
  const d = await compareWithTruth(warehouse, sandbox);
  const connections = sandbox.truth.connections().filter((e) => e.created_at >= '2025-07-01').length;
  return {
    records: sandbox.truth.records().length + sandbox.truth.users().length + connections,
    missing: d.missingRecords.length + d.missingUsers.length + d.missingConnectionEvents.length,
    duplicated: d.duplicateKeys + d.unexpectedRecords.length,
    regressed: d.wrongVersion.length + d.wrongDeleted.length,
    differences: d,
  };
}

/**
 * A stream run's counts: what the stream carried from log position `fromSeq` on (every record with an
 * event there at the truth's current version, every connection event) against the warehouse
 * (test/e2e/stream-compare.ts). records: the distinct ids the stream carried.
 */
export async function countStreamAgainstTruth(
  warehouse: Warehouse,
  sandbox: Sandbox,
  fromSeq: number,
): Promise<RunCounts & { differences: StreamDifferences }> {
  const d = await compareStreamWithTruth(warehouse, sandbox, fromSeq);
  const carried = sandbox.truth.events().filter((e) => e.seq >= fromSeq);
  return {
    records: new Set(carried.map((e) => (e.payload as { id: string }).id)).size,
    missing: d.missingRecords.length + d.missingConnectionEvents.length,
    duplicated: d.duplicateKeys + d.unknownRecords.length,
    regressed: d.wrongVersion.length + d.wrongDeleted.length,
    differences: d,
  };
}

/**
 * Waits (polling every 10 ms, up to 60 s) until the ledger is planned and `share` of its windows are
 * done, or `ended()` says the run is over: the seeded moment a fault strikes.
 */
export async function waitForWindowsDone(
  db: Kysely<Database>,
  share: number,
  ended: () => boolean = () => false,
): Promise<void> {
  await waitForStep(
    `the ledger planned and ${Math.round(share * 100)} % of its windows done`,
    async () => {
      if (ended()) return;
      const { done, total } = await ledgerProgress(db);
      expect(total).toBeGreaterThan(0);
      expect(done).toBeGreaterThanOrEqual(Math.floor(share * total));
    },
    { timeout: 60_000, interval: 10 },
  );
}

/** mulberry32: small, seeded, good enough to pick kill points reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** `--from D --to D` covering `days` of data plus the connection events generated before them. */
export function backfillArgs(days: number): string[] {
  const to = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.now() - (days + 20) * 86_400_000).toISOString().slice(0, 10);
  return ['backfill', '--from', from, '--to', to];
}

/**
 * Runs the CLI again (no faults any more) until it exits 0, at most `attempts` times: a run under faults
 * may fail visibly (exit 1, "run the same command again"); the promise is that re-running finishes.
 */
export async function rerunToCompletion(
  args: string[],
  env: NodeJS.ProcessEnv,
  attempts = 3,
): Promise<{ code: number | null; stdout: string; stderr: string; attempts: number }> {
  const { runCli } = await import('../helpers/cli.ts');
  let last = { code: null as number | null, stdout: '', stderr: '' };
  for (let i = 1; i <= attempts; i++) {
    last = await runCli(args, env);
    if (last.code === 0) return { ...last, attempts: i };
  }
  return { ...last, attempts };
}

/**
 * The backfill run under faults (`first`) ended as a run may: 0, or 1 with "run the same command again",
 * never a crash (a socket dying under a checked-out client once crashed the process with an unhandled
 * 'error' event); after a 1, the same command without faults finishes. Says whether it ran again.
 */
export async function expectFinishedOrRerun(
  first: { code: number | null; stderr: string },
  days: number,
  env: NodeJS.ProcessEnv,
): Promise<boolean> {
  expect(first.stderr).not.toMatch(/Unhandled 'error' event/);
  expect([0, 1], first.stderr).toContain(first.code);
  if (first.code === 0) return false;
  const again = await rerunToCompletion(backfillArgs(days), env);
  expect(again.code, again.stderr).toBe(0);
  return true;
}

/** Waits until the sandbox holds both streams (primary and reconciliation) and the primary has a member. */
export async function waitForBothStreams(sandbox: Sandbox): Promise<void> {
  await waitForStep(
    'both streams, the primary with a member',
    () => {
      expect(sandbox.truth.streams()).toHaveLength(2);
      expect(sandbox.truth.streams()[0]?.members).toBeGreaterThan(0);
    },
    { timeout: 30_000, interval: 20 },
  );
}

/**
 * Waits until PostgreSQL holds no session of the process `pid` (a killed `validic-sync` child). A session
 * outlives its process by a moment: a COMMIT the process sent just before the kill still lands, so a
 * snapshot of the warehouse taken as soon as the process is gone may miss rows that then appear. On a
 * busy machine that moment lasted long enough to count a committed micro-batch as lost.
 */
export async function waitForSessionsToEnd(db: Kysely<Database>, pid: number | undefined): Promise<void> {
  if (pid === undefined) return;
  const name = warehouseApplicationName(pid);
  await waitForStep(
    `the PostgreSQL sessions of process ${pid} to end`,
    async () => {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity where application_name = ${name}`.execute(db);
      expect(rows[0]!.n).toBe(0);
    },
    { timeout: 60_000, interval: 50 },
  );
}
