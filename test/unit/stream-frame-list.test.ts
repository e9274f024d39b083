/**
 * The consumer's micro-batch buffer (the persistent list of src/stream/consumer-machine.ts): appending is O(1), leaves the list it
 * appended to unchanged (so `next` stays pure, STATE-MACHINE.md I10), and a commit gets the frames in
 * arrival order in an array of its own.
 */
import { describe, expect, it } from 'vitest';
import { NO_FRAMES } from '../../src/stream/consumer-machine.ts';
import { appendFrame, framesInOrder } from '../../src/stream/micro-batch.ts';
import type { DataFrame } from '../../src/stream/types.ts';

const frame = (id: string): DataFrame => ({
  kind: 'data',
  payload: { id },
  createdAt: '2026-05-20T12:00:00.000Z',
  receivedAt: 0,
  bytes: id.length,
});

const idOf = (f: DataFrame): string => (f.kind === 'data' ? (f.payload as { id: string }).id : f.kind);

describe('the micro-batch buffer (consumer-machine.ts)', () => {
  it('keeps arrival order and leaves the list it appended to unchanged', () => {
    const one = appendFrame(NO_FRAMES, frame('a'));
    const two = appendFrame(one, frame('b'));
    const other = appendFrame(one, frame('c'));
    expect(framesInOrder(two).map(idOf)).toEqual(['a', 'b']);
    expect(framesInOrder(other).map(idOf)).toEqual(['a', 'c']);
    expect(framesInOrder(one)).toHaveLength(1);
    expect(NO_FRAMES.length).toBe(0);
    expect(framesInOrder(NO_FRAMES)).toEqual([]);
  });

  it('hands out a new array each time', () => {
    const list = appendFrame(NO_FRAMES, frame('a'));
    const first = framesInOrder(list);
    first.push(frame('x'));
    expect(framesInOrder(list)).toHaveLength(1);
  });

  it('gathers a full micro-batch in linear time', () => {
    let list = NO_FRAMES;
    for (let i = 0; i < 100_000; i++) list = appendFrame(list, frame(String(i)));
    const frames = framesInOrder(list);
    expect(frames).toHaveLength(100_000);
    expect(idOf(frames[99_999]!)).toBe('99999');
  });
});
