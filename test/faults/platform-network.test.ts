/**
 * The network between the CLI and the platform misbehaves (a TCP proxy in front of the sandbox): added
 * latency, stalls (bytes held, then released), resets of every open connection, and short cuts that
 * refuse new connections, at seeded moments of a running `validic-sync backfill`. A run that gives up
 * says so; running it again finishes, and the warehouse equals the truth.
 */
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { recordFaultRun } from './fault-results.ts';
import { backfillArgs, countAgainstTruth, expectFinishedOrRerun, seededRandom } from './oracle.ts';
import { inScenario } from './scenario.ts';

const DAYS = 35;
const RUNS = 4;

/** Applies one seeded fault to the proxy every `everyMs` until stopped. */
function misbehave(proxy: TcpProxy, random: () => number, everyMs: number): { stop(): string[] } {
  const done: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const next = () => {
    if (stopped) return;
    const pick = random();
    if (pick < 0.35) {
      done.push(`reset ${proxy.reset()}`);
    } else if (pick < 0.55) {
      proxy.stall();
      const ms = 200 + Math.floor(random() * 800);
      done.push(`stall ${ms} ms`);
      setTimeout(() => proxy.resume(), ms);
    } else if (pick < 0.75) {
      proxy.cut();
      const ms = 100 + Math.floor(random() * 400);
      done.push(`cut ${ms} ms`);
      setTimeout(() => proxy.restore(), ms);
    } else {
      const ms = Math.floor(random() * 40);
      proxy.setLatency(ms);
      done.push(`latency ${ms} ms`);
    }
    timer = setTimeout(next, everyMs / 2 + random() * everyMs);
  };
  timer = setTimeout(next, random() * everyMs);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      proxy.restore();
      return done;
    },
  };
}

describe('fault platform-network', () => {
  it(`lands exactly the truth through ${RUNS} seeded runs of latency, stalls, resets and cuts`, async () => {
    await Promise.all(
      Array.from({ length: RUNS }, async (_, run) => {
        const random = seededRandom(4_400 + run);
        await inScenario({ seed: 500 + run, users: 3, days: DAYS }, async ({ sandbox, db, onCleanup }) => {
          const proxy = await startTcpProxy({ targetPort: sandbox.port });
          onCleanup(() => proxy.close());
          const env = sandboxEnv(sandbox, {
            DATABASE_URL: db.url,
            VALIDIC_API_URL: proxy.rewriteUrl(sandbox.apiUrl),
            VALIDIC_STREAMS_URL: proxy.rewriteUrl(sandbox.streamsUrl),
            VALIDIC_LEGACY_URL: proxy.rewriteUrl(sandbox.legacyUrl),
            VALIDIC_SYNC_CONCURRENCY: '3',
          });
          const chaos = misbehave(proxy, random, 400);
          const first = await runCli(backfillArgs(DAYS), env);
          const faults = chaos.stop();
          expect(first.stderr).not.toContain(sandbox.token);
          await expectFinishedOrRerun(first, DAYS, env);
          expect(faults.length).toBeGreaterThan(0);
          const counts = await countAgainstTruth(db.warehouse, sandbox);
          recordFaultRun('platform-network', counts);
          expect(counts.differences, `run ${run}: ${faults.join(', ')}`).toEqual(NO_DIFFERENCES);
        });
      }),
    );
  });
});
