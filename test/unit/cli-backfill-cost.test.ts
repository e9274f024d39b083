/**
 * What a backfill costs before it starts: the windows it plans (counted as the job plans them, without
 * listing them), the requests and hours at the token's paced rate, the question beyond an hour; and the
 * progress that counts windows done of windows planned.
 */
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backfillCost, formatBackfillCost } from '../../src/cli/backfill-cost.ts';
import { canAsk, confirm } from '../../src/cli/confirm.ts';
import { createProgress } from '../../src/cli/progress.ts';
import { V2_RESOURCES } from '../../src/validic/platform-limits.ts';
import {
  backfillRunArgs,
  countBackfillWindows,
  planBackfillWindows,
} from '../../src/warehouse/backfill-plan.ts';

const day = (n: number) => new Date(Date.UTC(2024, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

describe('a backfill plan', () => {
  it('counts exactly the windows it plans, for any range, resources and users', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 900 }),
        fc.integer({ min: 0, max: 800 }),
        fc.subarray([...V2_RESOURCES], { minLength: 1 }),
        fc.integer({ min: 0, max: 4 }),
        fc.boolean(),
        (start, length, resources, users, connections) => {
          const args = backfillRunArgs({ from: day(start), to: day(start + length), resources, connections });
          const uids = Array.from({ length: users }, (_, i) => `u${i}`);
          expect(countBackfillWindows(args, users)).toBe(planBackfillWindows(args, uids).length);
        },
      ),
    );
  });

  it('is identified by its arguments, however they were written', () => {
    const a = backfillRunArgs({
      from: '2025-01-01',
      to: '2025-02-01',
      resources: ['summary', 'measurements', 'summaries'],
      uids: ['b', 'a', 'b'],
      connections: true,
    });
    expect(a).toEqual({
      from: '2025-01-01',
      to: '2025-02-01',
      resources: ['measurements', 'summaries'],
      uids: ['a', 'b'],
      connections: true,
    });
  });
});

describe('what a backfill costs', () => {
  it('takes the pending windows and the listing, at the paced rate of the token', () => {
    const estimate = { users: 2500, windows: 22_978, done: 978 };
    const cost = backfillCost(estimate, { requestsPerHour: 2000, listsUsers: true });
    expect(cost.pending).toBe(22_000);
    expect(cost.requests).toBe(22_003);
    expect(cost.usablePerHour).toBe(1900);
    expect(cost.hours).toBeCloseTo(22_003 / 1900, 6);
    expect(formatBackfillCost(estimate, cost)).toBe(
      '2,500 users, 22,978 windows (resuming: 978 already done): about 22,003 requests, 11.6 hours at 1,900 requests an hour (VALIDIC_REQUESTS_PER_HOUR paced to 95 %; longer while a worker shares the token)',
    );
    const line = (windows: number) =>
      formatBackfillCost(
        { users: 1, windows, done: 0 },
        backfillCost({ users: 1, windows, done: 0 }, { requestsPerHour: 2000, listsUsers: false }),
      );
    expect(line(16)).toMatch(/^1 user, 16 windows: about 16 requests, under a minute at/);
    expect(line(40)).toMatch(/, 1 minute at/);
    expect(line(1500)).toMatch(/, 47 minutes at/);
    expect(line(190_000)).toMatch(/, 4\.2 days at/);
  });
});

describe('asking before a long backfill', () => {
  const ask = async (answer: string | null) => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (chunk: Buffer) => {
      shown += chunk.toString();
    });
    const answered = confirm('Start it?', { input, output });
    if (answer === null) input.end();
    else input.write(`${answer}\n`);
    return { yes: await answered, shown };
  };

  it('goes on only on y or yes, and a closed input answers no', async () => {
    expect(await ask('y')).toEqual({ yes: true, shown: 'Start it? [y/N] ' });
    expect((await ask('YES')).yes).toBe(true);
    expect((await ask('')).yes).toBe(false);
    expect((await ask('n')).yes).toBe(false);
    expect((await ask(null)).yes).toBe(false);
  });

  it('asks only a terminal, and never in CI', () => {
    const ci = process.env.CI;
    try {
      delete process.env.CI;
      expect(canAsk({ isTTY: true })).toBe(true);
      expect(canAsk({})).toBe(false);
      process.env.CI = 'true';
      expect(canAsk({ isTTY: true })).toBe(false);
    } finally {
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
    }
  });
});

describe('progress', () => {
  it('counts its unit done of planned, and ends on the last count', () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    const progress = createProgress({
      label: 'audit org-1',
      unit: 'cells',
      stream: stream as unknown as NodeJS.WriteStream,
      plain: true,
      plainEveryMs: 60_000,
    });
    progress.setTotal(140);
    progress.update(0, '');
    progress.update(70, 'half');
    progress.update(140, 'all');
    progress.stop();
    expect(text.trim().split('\n')).toEqual(['audit org-1: 0/140 cells', 'audit org-1: 140/140 cells | all']);
  });
});
