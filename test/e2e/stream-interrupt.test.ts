/**
 * Ctrl-C while data flows: `validic-sync stream` stops after the current batch and exits 0, having
 * recorded the stop as a gap (the platform may have sent frames it never read). The gap asks for a
 * reconciliation pass after the stop signal; the pass scheduler once stored that finished request as
 * a pass for ever running, and the command then spun on it and never exited, deaf to a second Ctrl-C.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { useSandbox, useTempDir } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

describe('stream interrupted while data flows', () => {
  const sandbox = useSandbox({ seed: 31, users: 3, days: 2, pokeIntervalMs: 200 });
  const db = useTestDatabase();
  const dir = useTempDir('validic-stream-interrupt-');

  it('stops after the current batch, records the gap and exits 0', async () => {
    const config = await dir.writeJson('config.json', { stream: { batchMaxWaitMs: 50 } });
    const cli = spawnCli(
      ['stream'],
      sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config }),
    );
    await waitForStep(
      'the stream to have one member',
      () => expect(sandbox.truth.streams()[0]?.members).toBe(1),
      { timeout: 20_000, interval: 20 },
    );
    // Faster than pokes can come between events (200 ms of quiet): the stop lands while data flows.
    sandbox.control.startLiveFeed({ ratePerSecond: 200 });
    await waitForStep(
      'over 50 records stored',
      async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from validic.records`.execute(
          db.warehouse.db,
        );
        expect(rows[0]!.n).toBeGreaterThan(50);
      },
      { timeout: 20_000, interval: 50 },
    );
    cli.kill('SIGINT');
    const killer = setTimeout(() => cli.kill('SIGKILL'), 20_000);
    const stopped = await cli.result.finally(() => clearTimeout(killer));
    sandbox.control.stopLiveFeed();
    expect(stopped.signal, 'still running 20 s after Ctrl-C').toBeNull();
    expect(stopped.code, stopped.stderr.slice(-3000)).toBe(0);
    expect(stopped.stdout).toMatch(/interrupted after/);
    const gaps = await sql<{ reason: string }>`select reason from validic_sync.stream_gaps`.execute(
      db.warehouse.db,
    );
    expect(gaps.rows.map((g) => g.reason)).toContain('stopped');
  });
});
