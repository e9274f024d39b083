/**
 * A silent stream (connection open, no data, not even pokes: the `silentStream` fault) is detected by
 * the watchdog after `staleAfterMs`, dropped and reconnected after a back-off; the logged state
 * transitions show it (live → stale → backing_off → connecting → live), and nothing sent meanwhile is lost.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { useSandbox, useTempDir } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES, stateTransitions } from './stream-compare.ts';

const STALE_AFTER_MS = 800;
const BACKOFF_MAX_MS = 200;

describe('silent stream', () => {
  const sandbox = useSandbox({ seed: 14, users: 3, days: 2, pokeIntervalMs: 100 });
  const db = useTestDatabase();
  const dir = useTempDir('validic-stream-');

  it('is detected after staleAfterMs and reconnected after a back-off', async () => {
    const config = await dir.writeJson('config.json', {
      stream: {
        staleAfterMs: STALE_AFTER_MS,
        gapAfterMs: 60_000,
        batchMaxWaitMs: 50,
        backoffBaseMs: 50,
        backoffCapMs: BACKOFF_MAX_MS,
      },
    });
    const fromSeq = sandbox.truth.events().length;
    const cli = spawnCli(
      ['stream', '--exit-when-idle', '3'],
      sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config, LOG_LEVEL: 'info' }),
    );
    let stderr = '';
    cli.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    await waitForStep(
      'the stream to have one member',
      () => expect(sandbox.truth.streams()[0]?.members).toBe(1),
      { timeout: 20_000, interval: 20 },
    );
    sandbox.control.startLiveFeed({ ratePerSecond: 20 });
    await waitForStep(
      'over 5 records stored',
      async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from validic.records where org_id = ${sandbox.orgId}`.execute(
          db.warehouse.db,
        );
        expect(rows[0]!.n).toBeGreaterThan(5);
      },
      { timeout: 20_000, interval: 50 },
    );

    sandbox.control.setFaults({ silentStream: true });
    await waitForStep(
      'the stream to turn stale',
      () => expect(stateTransitions(stderr).some((t) => t.to === 'stale')).toBe(true),
      { timeout: 20_000, interval: 20 },
    );
    sandbox.control.setFaults({ silentStream: false });
    await waitForStep(
      'the stream live again after stale',
      () => {
        const transitions = stateTransitions(stderr);
        const stale = transitions.findIndex((t) => t.to === 'stale');
        expect(transitions.slice(stale).some((t) => t.to === 'live')).toBe(true);
      },
      { timeout: 20_000, interval: 20 },
    );
    sandbox.control.stopLiveFeed();

    const result = await cli.result;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/stale [1-9]/);
    const transitions = stateTransitions(stderr);
    const stale = transitions.findIndex((t) => t.to === 'stale');
    expect(transitions[stale - 1]?.to).toBe('live');
    expect(transitions[stale]!.reason).toBe(`no frame for ${STALE_AFTER_MS} ms`);
    const [backingOff, connecting, live] = transitions.slice(stale + 1, stale + 4);
    expect(backingOff).toMatchObject({ from: 'stale', to: 'backing_off' });
    const delay = Number(/retry in (\d+) ms/.exec(backingOff!.reason)?.[1]);
    expect(delay).toBeLessThanOrEqual(BACKOFF_MAX_MS);
    expect(connecting).toMatchObject({ from: 'backing_off', to: 'connecting' });
    expect(live).toMatchObject({ from: 'connecting', to: 'live' });

    // What the platform logged during the silence arrived after the reconnect.
    expect(await compareStreamWithTruth(db.warehouse, sandbox, fromSeq)).toEqual(NO_STREAM_DIFFERENCES);
  });
});
