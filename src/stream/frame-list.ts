/**
 * The micro-batch being gathered (`MachineState.buffer`), as a persistent list, newest frame first.
 *
 * Appending is O(1) and never changes a list that another state still holds: the transition function
 * stays pure (`next` never changes the state it is given, STATE-MACHINE.md I10) without copying the
 * whole batch on every frame (`[...buffer, item]` per frame was O(n²) over a micro-batch). An array
 * appended in place would not do: `next` copies the state shallowly, so the state it was given would
 * see the frame too. The frames become an array once, in arrival order, when the batch is committed
 * (`framesInOrder`, called by `flush`), so a commit never shares an array with the buffer.
 */
import type { DataFrame } from './types.ts';

export interface FrameList {
  /** How many frames the list holds. */
  readonly length: number;
  /** The frame appended last; undefined only in the empty list. */
  readonly newest: DataFrame | undefined;
  /** The list `newest` was appended to; undefined only in the empty list. */
  readonly before: FrameList | undefined;
}

/** The empty list (shared: nothing ever changes a list). */
export const NO_FRAMES: FrameList = Object.freeze({ length: 0, newest: undefined, before: undefined });

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
