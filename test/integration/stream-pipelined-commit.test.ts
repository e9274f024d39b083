/**
 * `pipelineWrites`: writes land in order, one at a time; `commit` returns once the previous write has
 * landed (so the consumer reads on meanwhile); a write that failed is reported, with its frames, by the
 * next `commit` or by `drain`, which retry nothing: the consumer's machine holds what did not land.
 */
import { describe, expect, it } from 'vitest';
import { EarlierWriteFailed, pipelineWrites } from '../../src/stream/stream-writer.ts';
import type { DataFrame } from '../../src/stream/types.ts';

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
    const writer = pipelineWrites(
      async (n: number) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await gates[n]!.promise;
        running -= 1;
        landed.push(n);
      },
      () => [],
    );
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

  it('keeps nothing of a failing write: the next commit hands its frames back and starts nothing', async () => {
    const calls: number[] = [];
    const frames = (n: number): DataFrame[] => [
      { kind: 'bad', text: `f${n}`, reason: 'x', receivedAt: 0, bytes: 1 },
    ];
    const writer = pipelineWrites(async (n: number) => {
      calls.push(n);
      if (n === 0) throw new Error('database blip');
    }, frames);
    await writer.commit(0);
    // The next commit reports batch 0 with its frames, and does not start batch 1 (nor retry batch 0).
    const failure = await writer.commit(1).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EarlierWriteFailed);
    expect((failure as EarlierWriteFailed).frames).toEqual(frames(0));
    expect(((failure as EarlierWriteFailed).cause as Error).message).toBe('database blip');
    expect(calls).toEqual([0]);
    // The caller (the consumer's machine, the one owner of what did not land) retries both, in order.
    expect(writer.busy()).toBe(false);
    await writer.commit(2);
    await writer.drain();
    expect(calls).toEqual([0, 2]);
  });

  it('drain reports a write that failed', async () => {
    const writer = pipelineWrites(
      async () => {
        throw new Error('gone');
      },
      () => [],
    );
    await writer.commit();
    await expect(writer.drain()).rejects.toThrow('an earlier stream write failed: gone');
  });

  it('waits for a write that must land, and throws its own error as itself', async () => {
    const gate = deferred();
    const calls: number[] = [];
    const writer = pipelineWrites(
      async (n: number) => {
        calls.push(n);
        await gate.promise;
        if (n === 1) throw new Error('still down');
      },
      () => [],
      (n: number) => n >= 1, // the held batch's retry
    );
    let landed = false;
    const retry = writer.commit(1).then(
      () => (landed = true),
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(landed).toBe(false); // started, not landed: the consumer must not read on yet
    gate.resolve();
    const error = await retry;
    // Its own failure, not an earlier write's: the caller holds these frames already.
    expect(error).not.toBeInstanceOf(EarlierWriteFailed);
    expect((error as Error).message).toBe('still down');
    expect(writer.busy()).toBe(false);
    await writer.commit(2);
    await writer.drain();
    expect(calls).toEqual([1, 2]);
  });
});
