/**
 * `pipelineWrites`: writes land in order, one at a time; `commit` returns once the previous write has
 * landed (so the consumer reads on meanwhile); a write that keeps failing is reported by the next
 * `commit` or by `drain`, which try it again first.
 */
import { describe, expect, it } from 'vitest';
import { pipelineWrites } from '../../src/stream/stream-consumer.ts';

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('pipelineWrites', () => {
  it('keeps one write in flight, in order, and drains', async () => {
    const landed: number[] = [];
    const gates = [deferred(), deferred(), deferred()];
    let running = 0;
    let maxRunning = 0;
    const writer = pipelineWrites(async (n: number) => {
      running += 1;
      maxRunning = Math.max(maxRunning, running);
      await gates[n]!.promise;
      running -= 1;
      landed.push(n);
    });
    await writer.commit(0); // started, not landed
    expect(landed).toEqual([]);
    let secondReturned = false;
    const second = writer.commit(1).then(() => {
      secondReturned = true;
    });
    await Promise.resolve();
    expect(secondReturned).toBe(false); // waits for write 0
    gates[0]!.resolve();
    await second;
    expect(landed).toEqual([0]);
    const third = writer.commit(2);
    gates[1]!.resolve();
    await third;
    gates[2]!.resolve();
    await writer.drain();
    expect(landed).toEqual([0, 1, 2]);
    expect(maxRunning).toBe(1);
  });

  it('does not retry a failing write itself: the next commit reports it, and tries it again first', async () => {
    const calls: number[] = [];
    let failuresLeft = 2;
    const writer = pipelineWrites(async (n: number) => {
      calls.push(n);
      if (n === 0 && failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('database blip');
      }
    });
    await writer.commit(0);
    expect(writer.busy()).toBe(true);
    // The next commit retries batch 0 first; it fails again and is reported (batch 1 is not started).
    await expect(writer.commit(1)).rejects.toThrow('database blip');
    expect(calls).toEqual([0, 0]);
    // The caller (the consumer, which holds its frames) retries: batch 0 lands first, then batch 1.
    await writer.commit(1);
    await writer.drain();
    expect(calls).toEqual([0, 0, 0, 1]);
    expect(writer.busy()).toBe(false);
  });

  it('drain reports a write that failed', async () => {
    const writer = pipelineWrites(async () => {
      throw new Error('gone');
    });
    await writer.commit();
    await expect(writer.drain()).rejects.toThrow('gone');
  });
});
