/**
 * One seeded run's set-up, shared by the fault tests: a sandbox and a fresh test database, removed after
 * the run however it ends, and `validic-sync backfill` started in the background.
 */
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import { runCli } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { backfillArgs } from './oracle.ts';

export interface Scenario {
  sandbox: Sandbox;
  db: TestDatabase;
  /**
   * Something more to undo after the run (a proxy, a queue, a folder): before the sandbox and the
   * database go, the last one registered first.
   */
  onCleanup(undo: () => unknown): void;
}

/**
 * Runs `run` with a sandbox started with `options` and a fresh database; removes both after it. The
 * sandbox re-sends nothing after a stream reconnect unless `options.faults.redeliverCount` says so: the
 * platform promises no number, and a test that relied on a few re-sent events would hide a loss.
 * `createDatabase` makes the database (default: a clone of the migrated template on the shared
 * cluster; a test that stops PostgreSQL passes one on its PRIVATE cluster, private-postgres.ts).
 */
export async function inScenario<T>(
  options: SandboxOptions,
  run: (s: Scenario) => Promise<T>,
  createDatabase: () => Promise<TestDatabase> = createTestDatabase,
): Promise<T> {
  const sandbox = await startSandbox({ ...options, faults: { redeliverCount: 0, ...options.faults } });
  let db: TestDatabase;
  try {
    db = await createDatabase();
  } catch (error) {
    await sandbox.close();
    throw error;
  }
  const undo: Array<() => unknown> = [];
  try {
    return await run({ sandbox, db, onCleanup: (fn) => undo.unshift(fn) });
  } finally {
    for (const fn of undo) await fn();
    await sandbox.close();
    await db.drop();
  }
}

/**
 * A sandbox clock anchor for seeded run `run`: today (UTC) at one of several times of day, so that data
 * generated from the clock (records created "today", versions changed just before now) takes the shapes
 * it takes at different hours. A failure that depended on the hour (the stream-drop failure of
 * 2026-11-26 did) then shows in every run of the suite, not in some hours only. The sandbox clock runs
 * on from there; the client learns the offset from the pokes.
 */
export function timeOfDayAnchor(run: number, now = Date.now()): number {
  const hours = [0.4, 6.2, 13.9, 16.8, 23.7];
  const day = now - (now % 86_400_000);
  const anchor = day + (hours[run % hours.length] as number) * 3_600_000;
  // Never ahead of the real clock by more than a day's remainder: stay on today's date.
  return anchor;
}

/** `validic-sync backfill` over `days` (backfillArgs), running; `finished()` turns true once it exits. */
export function startBackfill(days: number, env: NodeJS.ProcessEnv) {
  const result = runCli(backfillArgs(days), env);
  let finished = false;
  void result.then(() => {
    finished = true;
  });
  return { result, finished: () => finished };
}
