/**
 * The micro-batch: frames buffered for the next commit, and the commit that takes them with the cursor
 * they reach. A frame read by the machine enters here once (`takeIntoBatch`), and leaves in a `commit`
 * effect (`flush`).
 */

import { nextCursor, parseTime, sameCursor } from './consumer-cursor.ts';
import { type Effect, type FrameList, type MachineState, NO_FRAMES } from './consumer-machine.ts';
import type { CommitReason, DataFrame, StreamVia } from './types.ts';

/** A new list: `list` with `frame` appended (`list` itself is unchanged). */
export function appendFrame(list: FrameList, frame: DataFrame): FrameList {
  return { length: list.length + 1, newest: frame, before: list };
}

/** The frames of `list` in the order they were appended, in a new array. */
export function framesInOrder(list: FrameList): DataFrame[] {
  const frames = new Array<DataFrame>(list.length);
  let node = list;
  for (let i = list.length - 1; i >= 0; i--) {
    frames[i] = node.newest as DataFrame;
    node = node.before as FrameList;
  }
  return frames;
}

/**
 * Commits the buffered frames with the cursor they reach (a `commit` effect; the state takes the
 * cursor on `committed`). Frames of a commit that failed (`unsaved`) go first: every commit is also
 * the retry of what is held. With `cursorOnly`, commits even without frames when the cursor
 * changed (gap opened or closed, heartbeat, stop). Returns whether a commit was asked for.
 */
export function flush(
  s: MachineState,
  fx: Effect[],
  now: number,
  via: StreamVia,
  reason: CommitReason,
  cursorOnly: boolean,
): boolean {
  const held = s.unsaved;
  // A new array for the commit (the buffer is a persistent list, consumer-machine.ts): what the commit carries
  // is never shared with the buffer that goes on filling, nor with the state `next` was given.
  const frames = held ? [...held.frames, ...framesInOrder(s.buffer)] : framesInOrder(s.buffer);
  const next = nextCursor(s, frames);
  if (frames.length === 0 && (!cursorOnly || sameCursor(next, s.committing?.cursor ?? s.cursor))) {
    s.lastCommitAt = now;
    return false;
  }
  const frameVia = held ? held.via : s.bufferVia;
  s.buffer = NO_FRAMES;
  s.bufferBytes = 0;
  s.unsaved = undefined;
  const commit = { frames, cursor: next, via: frames.length > 0 ? frameVia : via, reason };
  s.committing = commit;
  fx.push({ kind: 'commit', ...commit });
  return true;
}

/**
 * What a micro-batch does after a frame: `if-due` commits it when it is due (`microBatch.maxFrames`
 * frames, `maxBytes` of data, or its oldest frame `maxWaitMs` old, whichever comes first); `quiet` (a
 * poke that found nothing of its connection uncommitted) commits the quiet mark when the cursor does not
 * carry one past its newest `created_at` yet; `none` (the connection ends, and its end commits) only
 * buffers.
 */
export type AfterFrame = 'if-due' | 'quiet' | 'none';

/**
 * A frame's one step into the micro-batch: buffers `item` (a data or bad frame; none for a poke or
 * another event), then commits as `after` says. Returns whether a commit was asked for.
 */
export function takeIntoBatch(
  s: MachineState,
  fx: Effect[],
  now: number,
  via: StreamVia,
  item: DataFrame | undefined,
  after: AfterFrame,
): boolean {
  if (item) push(s, now, via, item);
  if (after === 'quiet') {
    // The first such poke after data commits it: a crash's gap, and a pass judging what this connection
    // could still commit, start there (not at the next 60 s heartbeat).
    const pending = s.committing?.cursor ?? s.cursor;
    const committedQuiet = parseTime(pending.quietAt);
    const newest = parseTime(pending.newestCreatedAt);
    if (committedQuiet === undefined || (newest !== undefined && committedQuiet < newest)) {
      return flush(s, fx, now, via, 'heartbeat', true);
    }
    return false;
  }
  return after === 'if-due' && flushIfDue(s, fx, now, via);
}

/**
 * Buffers `item` for the next micro-batch (O(1): the buffer is a persistent list, consumer-machine.ts; the
 * list the state had before is unchanged, so a state `next` was given never sees the frame).
 */
function push(s: MachineState, now: number, via: StreamVia, item: DataFrame): void {
  if (s.buffer.length === 0) s.bufferSince = now;
  s.bufferVia = via;
  s.buffer = appendFrame(s.buffer, item);
  s.bufferBytes += item.bytes;
}

/** Commits the batch if it is due (size, bytes, age); returns whether a commit was asked for. */
function flushIfDue(s: MachineState, fx: Effect[], now: number, via: StreamVia): boolean {
  const { microBatch } = s.options;
  if (s.buffer.length >= microBatch.maxFrames) return flush(s, fx, now, via, 'count', false);
  if (s.bufferBytes >= microBatch.maxBytes) return flush(s, fx, now, via, 'bytes', false);
  if (s.buffer.length > 0 && now >= s.bufferSince + microBatch.maxWaitMs)
    return flush(s, fx, now, via, 'time', false);
  return false;
}
