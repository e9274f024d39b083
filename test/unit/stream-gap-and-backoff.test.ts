import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PermanentError } from '../../src/errors/index.ts';
import { classifyOpenFailure } from '../../src/stream/consumer-connection.ts';
import { utcDate } from '../../src/stream/consumer-cursor.ts';
import { planGapFill } from '../../src/stream/consumer-replay.ts';
import { idleDelay } from '../../src/stream/consumer-waits.ts';

const DAY = 86_400_000;
const limits = { replayMaxDays: 30, checkpointRetentionDays: 7 };
const now = Date.parse('2026-05-20T12:00:00Z');

describe('planGapFill', () => {
  it('replays from the UTC date of T and catches up at T for a short gap', () => {
    const t = Date.parse('2026-05-19T23:30:00Z');
    expect(planGapFill(now, t, limits)).toEqual({
      replayDate: '2026-05-19',
      catchUpAtMs: t,
      tooLong: undefined,
    });
  });

  it('past the stream checkpoint retention, replays up to now and reports the gap', () => {
    const t = now - 8 * DAY;
    expect(planGapFill(now, t, limits)).toEqual({
      replayDate: '2026-05-12',
      catchUpAtMs: now,
      tooLong: {
        from: new Date(t).toISOString(),
        to: new Date(now).toISOString(),
        reason: 'stream-checkpoint-expired',
      },
    });
  });

  it('past the replay window, replays from the earliest date and reports what replay cannot serve', () => {
    const t = now - 45 * DAY;
    const plan = planGapFill(now, t, limits);
    expect(plan.replayDate).toBe('2026-04-21');
    expect(plan.catchUpAtMs).toBe(now);
    expect(plan.tooLong).toEqual({
      from: new Date(t).toISOString(),
      to: '2026-04-21T00:00:00.000Z',
      reason: 'beyond-replay',
    });
  });

  it('property: the replay date is never older than the window nor newer than T', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * DAY }), (age) => {
        const plan = planGapFill(now, now - age, limits);
        expect(plan.replayDate >= utcDate(now - 29 * DAY)).toBe(true);
        expect(plan.replayDate <= utcDate(now)).toBe(true);
        if (plan.tooLong?.reason === 'beyond-replay')
          expect(Date.parse(plan.tooLong.to)).toBeGreaterThan(now - age);
      }),
    );
  });
});

describe('idleDelay', () => {
  it('idle delays grow and the last repeats', () => {
    expect([0, 1, 2, 9].map((r) => idleDelay(r, [5, 10, 20]))).toEqual([5, 10, 20, 20]);
  });
});

describe('classifyOpenFailure', () => {
  it('sorts open errors', () => {
    expect(classifyOpenFailure(Object.assign(new Error('x'), { status: 422, retryable: true }))).toBe(
      'rebalancing',
    );
    expect(classifyOpenFailure(Object.assign(new Error('x'), { status: 401 }))).toBe('permanent');
    expect(classifyOpenFailure(Object.assign(new Error('x'), { status: 403 }))).toBe('permanent');
    expect(classifyOpenFailure(Object.assign(new Error('x'), { status: 400, retryable: false }))).toBe(
      'refused',
    );
    expect(classifyOpenFailure(new PermanentError('nope'))).toBe('refused');
    expect(classifyOpenFailure(Object.assign(new Error('x'), { status: 503, retryable: true }))).toBe(
      'retry',
    );
    expect(classifyOpenFailure(new TypeError('fetch failed'))).toBe('retry');
  });
});
