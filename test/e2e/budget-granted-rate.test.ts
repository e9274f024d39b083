/**
 * The fleet learns the platform's real limit. The sandbox grants less than the configuration says
 * (`grantedRate`: a token bucket on its clock): 1,000 requests an hour while the worker is configured
 * for 2,000; and, in a second run, 2,000 an hour while a second client spends half of it on the same
 * token. A backfill runs through the Redis-shared budget; once the rate is found (after 10 simulated
 * minutes) fewer than 1 % of the worker's requests are answered 429, and the warehouse ends equal to the
 * sandbox's truth. (The old budget kept asking at 95 % of 2,000 and had 40 % and more refused.)
 *
 * Accelerated: every rate is multiplied by SPEED, so a simulated minute lasts 1 s. The budget's climb
 * and fall are counted in answers, not time, so the speed changes nothing but the waiting.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime } from '../../src/worker/runtime.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { TEST_REDIS_URL } from '../helpers/redis.ts';
import { useSandbox, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const SPEED = 60;
const SIMULATED_MINUTE = 60_000 / SPEED;

describe.each([
  { name: 'granting 1,000 an hour, configured for 2,000', granted: 1000, other: 0, seed: 31 },
  {
    name: 'a second client spending half of 2,000 an hour on the same token',
    granted: 2000,
    other: 1000,
    seed: 32,
  },
])('a platform $name', ({ granted, other, seed }) => {
  const sandbox = useSandbox({ seed, users: 45, days: 6 });
  const db = useTestDatabase();
  const redis = useTestRedis(`granted-rate-${seed}`);

  it('is found: under 1 % of requests refused after 10 simulated minutes, nothing lost', async () => {
    sandbox.control.setFaults(
      { grantedRate: { requestsPerHour: granted * SPEED, burst: 20, retryAfter: false } },
      { reset: true },
    );
    const env = sandboxEnv(sandbox, {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      VALIDIC_REDIS_PREFIX: redis.prefix.slice(0, -1),
      VALIDIC_REQUESTS_PER_HOUR: String(2000 * SPEED),
    });
    const runtime = await openRuntime(loadConfig(env, {}), silentLogger, { warehouse: db.warehouse });
    const stop = new AbortController();
    // The other client: `other` requests an hour on the same token, sending a refused one again a second later.
    let otherRefused = 0;
    const otherClient = (async () => {
      if (other === 0) return;
      const url = `${sandbox.apiUrl}/organizations/${sandbox.orgId}/users?token=${sandbox.token}&limit=1`;
      const every = 3_600_000 / (other * SPEED);
      let next = performance.now();
      while (!stop.signal.aborted) {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status === 429) otherRefused++;
        next = res.status === 429 ? performance.now() + 1000 : next + every;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
      }
    })();
    try {
      const runner = createInlineRunner(runtime, stop.signal, 4);
      const failed: string[] = [];
      runner.on('failed', (job, error) => failed.push(`${job.name}: ${error.message}`));
      const t0 = performance.now();
      let warm: { requests: number; refused: number } | undefined;
      const warmup = setTimeout(() => {
        warm = {
          requests: runtime.requestStats.requests,
          refused: runtime.requestStats.byStatus['429'] ?? 0,
        };
      }, 10 * SIMULATED_MINUTE);
      await runner.enqueue('records.backfill', { orgId: sandbox.orgId, from: day(29), to: day(0) });
      await runner.drain();
      clearTimeout(warmup);
      const minutes = (performance.now() - t0) / SIMULATED_MINUTE;
      const total = {
        requests: runtime.requestStats.requests,
        refused: runtime.requestStats.byStatus['429'] ?? 0,
      };
      expect(
        warm,
        `the backfill ended within the warm-up (${minutes.toFixed(1)} simulated minutes)`,
      ).toBeDefined();
      const after = { requests: total.requests - warm!.requests, refused: total.refused - warm!.refused };
      const share = after.refused / after.requests;
      const grantedNow = await runtime.org(sandbox.orgId).budget.grantedPerHour();
      console.log(
        `granted ${granted}/h, other client ${other}/h: ${total.refused} of ${total.requests} requests refused over ` +
          `${minutes.toFixed(1)} simulated minutes; after the first 10: ${after.refused} of ${after.requests} ` +
          `(${(100 * share).toFixed(2)} %); budget now grants ${Math.round(grantedNow / SPEED)}/h; other client refused ${otherRefused}`,
      );
      expect(failed).toEqual([]);
      expect(after.requests).toBeGreaterThan(200);
      expect(share).toBeLessThan(0.01);
      expect(grantedNow / SPEED).toBeLessThan(granted - other + 100);
      expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
    } finally {
      stop.abort();
      await otherClient;
      await runtime.close();
    }
  });
});
