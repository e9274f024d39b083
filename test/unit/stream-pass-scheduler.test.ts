/**
 * The `stream` command's pass scheduler: one pass at a time, a request during a pass brings one more,
 * and a request after Ctrl-C settles at once (it once left `drain` spinning on a settled promise, so
 * the command never exited after a gap was reported while it stopped).
 */
import { describe, expect, it } from 'vitest';
import { createPassScheduler } from '../../src/stream/reconciliation.ts';

const summary = (passId: number) => ({ passId });

function scheduler(signal: AbortSignal, ready = () => true) {
  const releases: (() => void)[] = [];
  let runs = 0;
  const errors: unknown[] = [];
  const passes = createPassScheduler({
    run: () =>
      new Promise<{ passId: number }>((resolve) => {
        runs += 1;
        const id = runs;
        releases.push(() => resolve(summary(id)));
      }),
    ready,
    maxWaitMs: 1_000,
    signal,
    onError: (error) => errors.push(error),
  });
  return { passes, releases, runs: () => runs, errors };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('createPassScheduler', () => {
  it('settles a request made after the signal aborted: idle, and drain resolves', async () => {
    const controller = new AbortController();
    controller.abort();
    const { passes, runs } = scheduler(controller.signal);
    passes.request();
    expect(passes.idle()).toBe(true);
    await passes.drain();
    expect(runs()).toBe(0);
  });

  it('runs one pass at a time; a request during a pass brings exactly one more', async () => {
    const { passes, releases, runs } = scheduler(new AbortController().signal);
    passes.request();
    await tick();
    expect(runs()).toBe(1);
    expect(passes.idle()).toBe(false);
    passes.request();
    passes.request();
    releases[0]!();
    await tick();
    expect(runs()).toBe(2);
    releases[1]!();
    await passes.drain();
    expect(passes.idle()).toBe(true);
    expect(passes.passes().map((p) => p.passId)).toEqual([1, 2]);
  });

  it('waits for ready, and stops waiting when the signal aborts', async () => {
    const controller = new AbortController();
    const { passes, runs } = scheduler(controller.signal, () => false);
    passes.request();
    await tick();
    expect(passes.idle()).toBe(false);
    controller.abort();
    await passes.drain();
    expect(passes.idle()).toBe(true);
    expect(runs()).toBe(0);
  });
});
