/**
 * The loader's retry of a whole transaction after a conflict (retry-on-conflict.ts): 40P01 and 40001,
 * wherever they sit in the cause chain, run the transaction again after a short jittered wait, a bounded
 * number of times; any other error goes to the caller at once; each retry is told to the warehouse's
 * listeners (the worker's `validic_sync_transaction_retries_total`).
 */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/time/manual-clock.ts';
import {
  CONFLICT_ATTEMPTS,
  CONFLICT_BACKOFF,
  type ConflictRetry,
  onTransactionRetry,
  reportTransactionRetry,
  retryOnConflict,
} from '../../src/warehouse/loader/load-transaction.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';

const coded = (code: string, message = code) => Object.assign(new Error(message), { code });
const deadlock = () => coded('40P01', 'deadlock detected');
const serialization = () => coded('40001', 'could not serialize access due to concurrent update');

/** A transaction that fails with `errors` in turn, then returns 'committed'; counts its runs. */
function transaction(errors: (() => unknown)[]) {
  const runs: number[] = [];
  const run = async (attempt: number) => {
    runs.push(attempt);
    const error = errors[runs.length - 1];
    if (error) throw error();
    return 'committed';
  };
  return { run, runs };
}

describe('retryOnConflict', () => {
  it('runs the transaction again after a deadlock and a serialization failure, and says so', async () => {
    const clock = createManualClock();
    const { run, runs } = transaction([deadlock, serialization]);
    const retries: ConflictRetry[] = [];
    const result = await retryOnConflict(run, { clock, random: () => 0.5, onRetry: (r) => retries.push(r) });
    expect(result).toBe('committed');
    expect(runs).toEqual([1, 2, 3]);
    expect(retries.map(({ code, attempt, delayMs }) => ({ code, attempt, delayMs }))).toEqual([
      { code: '40P01', attempt: 1, delayMs: 10 + 25 },
      { code: '40001', attempt: 2, delayMs: 10 + 50 },
    ]);
    expect(clock.sleeps).toEqual([35, 60]);
  });

  it('finds the code under wrappers (a job error, an AggregateError)', async () => {
    const clock = createManualClock();
    const { run, runs } = transaction([
      () => new Error('apply failed', { cause: deadlock() }),
      () => new AggregateError([new Error('x'), serialization()], 'both'),
    ]);
    expect(await retryOnConflict(run, { clock })).toBe('committed');
    expect(runs).toEqual([1, 2, 3]);
  });

  it('gives up after CONFLICT_ATTEMPTS in all, with the last conflict', async () => {
    const clock = createManualClock();
    const last = deadlock();
    const { run, runs } = transaction([deadlock, deadlock, deadlock, () => last, deadlock]);
    await expect(retryOnConflict(run, { clock })).rejects.toBe(last);
    expect(runs).toHaveLength(CONFLICT_ATTEMPTS);
    expect(clock.sleeps).toHaveLength(CONFLICT_ATTEMPTS - 1);
  });

  it('waits short and jittered: within the back-off, never the same for every retrier', async () => {
    for (const random of [() => 0, () => 0.999_999]) {
      const clock = createManualClock();
      const { run } = transaction([deadlock, deadlock, deadlock]);
      await retryOnConflict(run, { clock, random });
      for (const [i, ms] of clock.sleeps.entries()) {
        expect(ms).toBeGreaterThanOrEqual(CONFLICT_BACKOFF.minMs!);
        expect(ms).toBeLessThan(CONFLICT_BACKOFF.minMs! + CONFLICT_BACKOFF.baseMs * 2 ** i);
        expect(ms).toBeLessThanOrEqual(CONFLICT_BACKOFF.capMs);
      }
    }
    const low = createManualClock();
    const high = createManualClock();
    await retryOnConflict(transaction([deadlock]).run, { clock: low, random: () => 0 });
    await retryOnConflict(transaction([deadlock]).run, { clock: high, random: () => 0.9 });
    expect(low.sleeps[0]).not.toBe(high.sleeps[0]);
  });

  it.each([
    ['a unique violation', () => coded('23505', 'duplicate key value')],
    ['an outage (the job runner waits it out)', () => coded('57P01', 'terminating connection')],
    ['a missing month partition', () => coded('23514', 'no partition of relation')],
    ['a bug', () => new TypeError('x is not a function')],
  ])('does not run the transaction again after %s', async (_name, error) => {
    const clock = createManualClock();
    const { run, runs } = transaction([error]);
    await expect(retryOnConflict(run, { clock })).rejects.toThrow();
    expect(runs).toEqual([1]);
    expect(clock.sleeps).toEqual([]);
  });
});

describe('onTransactionRetry', () => {
  it("tells each warehouse's listeners, until they unsubscribe; a failing listener is ignored", () => {
    const a = {} as Warehouse;
    const b = {} as Warehouse;
    const seen: string[] = [];
    const stop = onTransactionRetry(a, (code) => seen.push(`a:${code}`));
    onTransactionRetry(a, () => {
      throw new Error('a broken metrics hook');
    });
    onTransactionRetry(b, (code) => seen.push(`b:${code}`));
    reportTransactionRetry(a, '40P01');
    reportTransactionRetry(b, '40001');
    stop();
    reportTransactionRetry(a, '40P01');
    expect(seen).toEqual(['a:40P01', 'b:40001']);
  });
});
