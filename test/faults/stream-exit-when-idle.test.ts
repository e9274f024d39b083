/**
 * `validic-sync stream --exit-when-idle 8` against the sandbox at the platform's own rhythm (a poke
 * every 5 s, the consumer's default stale/reconnect rules), twenty seeded runs. Each run loads the
 * history with `backfill`, then streams through a seeded script:
 *   - a scripted server close (`streamCloseAfter`: the connection ends cleanly after its K-th event),
 *   - 422 storms (`reconnectStorm`: the next 1–3 connects within 3–8 s of every disconnect answer 422),
 *   - a silent connection (`silentStream`: open, no data, no pokes) for 9–20 s while the live feed keeps
 *     logging new, changed and deleted records (shorter and longer than the 15 s stale rule, and always
 *     longer than the 8 idle seconds),
 * then the feed stops and the command must exit by itself as idle. Every run must end with the warehouse
 * equal to the sandbox's truth (test/helpers/compare-with-truth.ts): an exit while the connection was
 * silent, backing off or reconnecting would leave records behind.
 *
 * `STREAM_IDLE_BASE_SEED` picks another base seed (seeds are base..base+19).
 */
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.ts';
import { stateTransitions } from '../e2e/stream-compare.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { createTestDatabase } from '../helpers/pg.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { recordFaultRun } from './fault-results.ts';
import { seededRandom } from './oracle.ts';

const RUNS = 20;
/** Runs at once: each spends most of its time waiting on the platform's 5 s rhythm. */
const PARALLEL = 5;
const BASE_SEED = Number(process.env.STREAM_IDLE_BASE_SEED ?? 1_600);
const IDLE_SECONDS = 8;
const DAY_MS = 86_400_000;

interface Script {
  seed: number;
  closeAfter: number;
  storm: { rejections: number; windowMs: number };
  silentMs: number;
  rate: number;
}

function scriptFor(seed: number): Script {
  const random = seededRandom(seed);
  return {
    seed,
    closeAfter: 15 + Math.floor(random() * 50),
    storm: { rejections: 1 + Math.floor(random() * 3), windowMs: 3_000 + Math.floor(random() * 5_000) },
    silentMs: 9_000 + Math.floor(random() * 11_000),
    rate: 10 + Math.floor(random() * 20),
  };
}

describe('stream --exit-when-idle 8 through a close, a silence and 422 storms', () => {
  it(`ends ${RUNS} seeded runs with the warehouse equal to the truth`, async () => {
    const scripts = Array.from({ length: RUNS }, (_, i) => scriptFor(BASE_SEED + i));
    const outcomes: string[] = [];
    for (let i = 0; i < scripts.length; i += PARALLEL) {
      const wave = await Promise.allSettled(scripts.slice(i, i + PARALLEL).map(run));
      wave.forEach((r, j) => {
        const s = scripts[i + j]!;
        if (r.status === 'rejected')
          outcomes.push(`seed ${s.seed} ${JSON.stringify(s)}: ${String(r.reason)}`);
      });
    }
    expect(outcomes).toEqual([]);
  }, 1_200_000);
});

async function run(script: Script): Promise<void> {
  const sandbox = await startSandbox({
    seed: script.seed,
    users: 3,
    days: 2,
    faults: { reconnectStorm: script.storm },
  });
  const db = await createTestDatabase();
  try {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, LOG_LEVEL: 'info' });
    const today = new Date(Date.now()).toISOString().slice(0, 10);
    const from = new Date(Date.now() - 14 * DAY_MS).toISOString().slice(0, 10);
    const backfill = await runCli(['backfill', '--from', from, '--to', today], env);
    expect(backfill.code, backfill.stderr).toBe(0);

    const cli = spawnCli(['stream', '--exit-when-idle', String(IDLE_SECONDS)], env);
    let stderr = '';
    cli.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const exited = cli.result.then(() => true);
    const waitFor = async (what: string, check: () => boolean, timeout: number) => {
      await waitForStep(
        what,
        async () => {
          if (await Promise.race([exited, Promise.resolve(false)]))
            throw new Error(`the command exited before ${what}`);
          if (!check()) throw new Error('the check is still false');
        },
        { timeout, interval: 50 },
      );
    };
    const events = () => sandbox.truth.events().length;

    // A precondition, not a figure: on a busy machine the command's start (Node, the warehouse, both
    // streams created) has taken more than 30 s, so the wait is long and the time is printed.
    const spawnedAt = Date.now();
    await waitFor('the stream connected', () => sandbox.truth.streams()[0]?.members === 1, 120_000);
    console.log(
      `stream-exit-when-idle seed ${script.seed}: connected ${((Date.now() - spawnedAt) / 1000).toFixed(1)} s after the start`,
    );
    sandbox.control.setFaults({ streamCloseAfter: script.closeAfter });
    sandbox.control.startLiveFeed({ ratePerSecond: script.rate });
    // The scripted close, then the reconnect through the 422 storm.
    await waitFor(
      'the server close',
      () => stateTransitions(stderr).some((t) => t.reason.startsWith('server ended the stream')),
      60_000,
    );
    sandbox.control.setFaults({ streamCloseAfter: null });
    await waitFor(
      'live again after the close',
      () => {
        const t = stateTransitions(stderr);
        const close = t.findIndex((x) => x.reason.startsWith('server ended the stream'));
        return t.slice(close).some((x) => x.to === 'live');
      },
      60_000,
    );
    // The silence: the feed goes on, so events wait on the platform. Its length is counted in events.
    sandbox.control.setFaults({ silentStream: true });
    const silentFrom = events();
    await waitFor(
      `${script.silentMs} ms of silence`,
      () => events() - silentFrom >= Math.round((script.rate * script.silentMs) / 1000),
      script.silentMs * 4,
    );
    sandbox.control.setFaults({ silentStream: false });
    const speaking = events();
    await waitFor('a little more feed', () => events() - speaking >= script.rate, 30_000);
    sandbox.control.stopLiveFeed();

    const result = await cli.result;
    expect(result.stderr).not.toContain(sandbox.token);
    expect(result.code, result.stderr.slice(-2_000)).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`idle for ${IDLE_SECONDS} s`));
    expect(result.stdout).toMatch(/reconnects [1-9]/);
    expect(result.stdout).toMatch(/rebalancing 422 [1-9]/);
    const diff = await compareWithTruth(db.warehouse, sandbox);
    recordFaultRun('stream-exit-when-idle', {
      records: sandbox.truth.records().length,
      missing: diff.missingRecords.length + diff.missingConnectionEvents.length + diff.missingUsers.length,
      duplicated: diff.duplicateKeys + diff.unexpectedRecords.length,
      regressed: diff.wrongVersion.length + diff.wrongDeleted.length,
    });
    expect(diff, `${result.stdout}\n${JSON.stringify(diff).slice(0, 1_000)}`).toEqual(NO_DIFFERENCES);
  } finally {
    sandbox.control.stopLiveFeed();
    await sandbox.close();
    await db.drop();
  }
}
