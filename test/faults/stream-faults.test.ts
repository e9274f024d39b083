/**
 * `validic-sync stream --exit-when-idle` under stream faults, with a live feed of new, changed and
 * deleted records: connections dropped every K data frames (`streamDropEvery`, seeded K), and
 * connections that go silent (`silentStream`: open, nothing sent, not even pokes) for a seeded while.
 * The consumer must reconnect (and fill gaps by replay) so that the warehouse holds every record the
 * stream carried at the truth's current version, nothing twice, and nothing older than the truth.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Faults, Sandbox } from '../../src/sandbox/index.ts';
import { compareStreamWithTruth, NO_STREAM_DIFFERENCES } from '../e2e/stream-compare.ts';
import { sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { recordFaultRun } from './fault-results.ts';
import { seededRandom } from './oracle.ts';
import { inScenario, timeOfDayAnchor } from './scenario.ts';

interface StreamScenario {
  kind: string;
  /** Faults on from the start. */
  initial: (random: () => number) => Partial<Faults>;
  /** Something done to the platform while the feed runs; resolves when it is over. */
  during?: (sandbox: Sandbox, random: () => number) => Promise<string>;
  idleSeconds: number;
}

const scenarios: StreamScenario[] = [
  {
    kind: 'stream-drop',
    initial: (random) => ({ streamDropEvery: 3 + Math.floor(random() * 8), unknownEventRate: 0.1 }),
    idleSeconds: 2,
  },
  {
    kind: 'stream-silent',
    initial: () => ({}),
    during: async (sandbox, random) => {
      const ms = 800 + Math.floor(random() * 1700);
      sandbox.control.setFaults({ silentStream: true });
      await new Promise((resolve) => setTimeout(resolve, ms));
      sandbox.control.setFaults({ silentStream: false });
      return `silent ${ms} ms`;
    },
    idleSeconds: 5,
  },
];

/** Seeded runs per scenario (`FAULT_STREAM_RUNS`, default 2; the bar is 20 in a row). */
const RUNS = Number(process.env.FAULT_STREAM_RUNS ?? 2);

describe.each(scenarios)('fault $kind', (scenario) => {
  it(
    `lands what the stream carried through ${RUNS} seeded runs`,
    async () => {
      // Two at a time (the machine has 2 cores).
      for (let first = 0; first < RUNS; first += 2)
        await Promise.all(
          Array.from({ length: Math.min(2, RUNS - first) }, (_, i) => streamRun(scenario, first + i)),
        );
    },
    Math.max(300_000, RUNS * 90_000),
  );
});

async function streamRun(scenario: StreamScenario, run: number): Promise<void> {
  const random = seededRandom(3_300 + run * 17 + scenario.kind.length);
  const faults = scenario.initial(random);
  await inScenario(
    {
      seed: 900 + run,
      users: 4,
      days: 3,
      pokeIntervalMs: 100,
      faults,
      // Several times of day across the runs: the sandbox's data depends on the clock.
      now: new Date(timeOfDayAnchor(run + scenario.kind.length)),
    },
    async ({ sandbox, db, onCleanup }) => {
      const dir = mkdtempSync(join(tmpdir(), 'validic-fault-stream-'));
      onCleanup(() => rmSync(dir, { recursive: true, force: true }));
      const config = join(dir, 'config.json');
      writeFileSync(
        config,
        JSON.stringify({
          stream: {
            staleAfterMs: 500,
            gapAfterMs: run === 0 ? 10_000 : 300,
            batchMaxWaitMs: 50,
            backoffBaseMs: 20,
            backoffCapMs: 300,
          },
          organizations: [{ stream: { connections: 1 + (run % 2) } }],
        }),
      );
      const fromSeq = sandbox.truth.events().length;
      const cli = spawnCli(
        ['stream', '--exit-when-idle', String(scenario.idleSeconds)],
        sandboxEnv(sandbox, { DATABASE_URL: db.url, VALIDIC_SYNC_CONFIG: config }),
      );
      await waitForStep(
        'the stream to have a member',
        () => expect(sandbox.truth.streams()[0]?.members).toBeGreaterThan(0),
        { timeout: 20_000, interval: 20 },
      );
      sandbox.control.startLiveFeed({ ratePerSecond: 40 + Math.floor(random() * 60) });
      const target = 80 + Math.floor(random() * 120);
      const what = scenario.during ? await scenario.during(sandbox, random) : JSON.stringify(faults);
      // The feed runs on after the fault ends: the stream must carry what came during it and after it.
      const afterFault = sandbox.truth.events().length;
      await waitForStep(
        'the feed past its target and 30 events after the fault',
        () => {
          const now = sandbox.truth.events().length;
          expect(now - fromSeq).toBeGreaterThan(target);
          expect(now - afterFault).toBeGreaterThan(30);
        },
        { timeout: 30_000, interval: 20 },
      );
      sandbox.control.stopLiveFeed();
      const result = await cli.result;
      expect(result.stderr).not.toContain(sandbox.token);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/idle for/);
      // Every gap is left to the reconciliation stream: no REST backfill over the organization.
      expect(result.stdout).toMatch(/REST backfills enqueued 0\n/);
      const diff = await compareStreamWithTruth(db.warehouse, sandbox, fromSeq);
      const expected = new Set(
        sandbox.truth
          .events()
          .filter((e) => e.seq >= fromSeq)
          .map((e) => (e.payload as { id?: string }).id),
      ).size;
      recordFaultRun(scenario.kind, {
        records: expected,
        missing: diff.missingRecords.length + diff.missingConnectionEvents.length,
        duplicated: diff.duplicateKeys + diff.unknownRecords.length,
        regressed: diff.wrongVersion.length + diff.wrongDeleted.length,
      });
      expect(diff, `${scenario.kind} run ${run}: ${what}\n${result.stdout}`).toEqual(NO_STREAM_DIFFERENCES);
    },
  );
}
