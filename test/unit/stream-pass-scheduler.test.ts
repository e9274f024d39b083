/**
 * The in-process scheduler of reconciliation passes (src/stream/pass-scheduler.ts): one pass at a time,
 * a request while one runs is served by one more pass, and a request after the stop signal runs nothing
 * and leaves the scheduler idle (it once left `drain()` spinning forever: `stream` hung on a Ctrl-C that
 * recorded a gap).
 */
import { describe, expect, it } from 'vitest';
import { createPassScheduler } from '../../src/stream/pass-scheduler.ts';
import type { ReconcilePassSummary } from '../../src/stream/run-reconcile-pass.ts';

const summary = (n: number) => ({ passId: n }) as unknown as ReconcilePassSummary;

describe('pass scheduler', () => {
  it('runs a requested pass once ready, and one more for a request made while it ran', async () => {
    const controller = new AbortController();
    let runs = 0;
    let release: () => void = () => {};
    const scheduler = createPassScheduler({
      run: async () => {
        runs += 1;
        if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
        return summary(runs);
      },
      ready: () => true,
      signal: controller.signal,
      onError: (error) => {
        throw error;
      },
    });
    expect(scheduler.idle()).toBe(true);
    scheduler.request();
    expect(scheduler.idle()).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 10));
    scheduler.request();
    release();
    await scheduler.drain();
    expect(runs).toBe(2);
    expect(scheduler.idle()).toBe(true);
    expect(scheduler.passes()).toHaveLength(2);
  });

  it('a request after the signal aborted runs nothing, and drain resolves', async () => {
    const controller = new AbortController();
    controller.abort();
    let runs = 0;
    const scheduler = createPassScheduler({
      run: async () => {
        runs += 1;
        return summary(runs);
      },
      ready: () => true,
      signal: controller.signal,
      onError: () => {},
    });
    scheduler.request();
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Checked before drain(): with the old bug drain() never yields to the event loop (a test timeout
    // could not even fire).
    expect(scheduler.idle()).toBe(true);
    await scheduler.drain();
    expect(runs).toBe(0);
  });
});
