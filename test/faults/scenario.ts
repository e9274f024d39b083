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

/** Runs `run` with a sandbox started with `options` and a fresh database; removes both after it. */
export async function inScenario<T>(options: SandboxOptions, run: (s: Scenario) => Promise<T>): Promise<T> {
  const sandbox = await startSandbox(options);
  const db = await createTestDatabase();
  const undo: Array<() => unknown> = [];
  try {
    return await run({ sandbox, db, onCleanup: (fn) => undo.unshift(fn) });
  } finally {
    for (const fn of undo) await fn();
    await sandbox.close();
    await db.drop();
  }
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
