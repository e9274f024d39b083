/**
 * What a frame does to the consumer's state, pure: classified once (frame-kinds.ts), counted, taken into
 * the micro-batch in one step (micro-batch.ts), and possibly the end of its connection (the replay's
 * hand-off, idle hygiene's last poke, the replay's deadline). Frames that arrive after the end was
 * decided are only kept (`keepFrame`): they were fully received and the platform counts them as
 * delivered.
 */
import {
  type ConnectionEnd,
  type ConnectionState,
  type Effect,
  endConnection,
  log,
  type MachineState,
} from './consumer-machine.ts';
import { classifyFrame } from './frame-kinds.ts';
import { type AfterFrame, takeIntoBatch } from './micro-batch.ts';
import type { ClassifiedFrame, DataFrame, SseFrame, StreamVia } from './types.ts';

export function readFrame(
  s: MachineState,
  c: ConnectionState,
  fx: Effect[],
  now: number,
  frame: SseFrame,
): void {
  const { via } = c;
  const classified = classifyFrame(frame);
  // Checked per frame too: a replay that keeps sending data never reaches the timer.
  if (now >= c.deadline) {
    endConnection(c, fx, { kind: 'timed-out' });
    keepFrame(s, c, fx, now, frame, classified);
    return;
  }
  if (!c.delivered) {
    // A connection that delivers is healthy again: the next back-off starts small.
    c.delivered = true;
    s.attempt = 0;
    s.rateLimitAttempt = 0;
  }
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  c.lastFrame = frame.type === 'oversized' ? 'oversized' : classified.kind;
  const frames = s.counters.frames;
  let item: DataFrame | undefined;
  let after: AfterFrame = 'if-due';
  let ending: ConnectionEnd | undefined;
  switch (classified.kind) {
    case 'data': {
      frames.data += 1;
      c.pokesWithoutData = 0;
      c.pokesAfterCatchUp = 0;
      if (via === 'stream') {
        s.idleRound = 0;
        s.quietFromMs = frame.receivedAt;
      }
      // A pass that delivers makes progress (the reconciliation stream resumes after it): its failures
      // in a row start again. A replay (of the primary, or a pass over the replay) restarts from its date,
      // so it does not.
      if (s.options.role === 'pass' && !s.options.passReplay) s.replayFailures = 0;
      const { createdAtMs } = classified;
      if (belowReplayFloor(s, via, createdAtMs)) s.counters.replaySkipped += 1;
      else item = bufferedItem(classified, frame);
      if (c.catchUpAtMs !== undefined && createdAtMs !== undefined && createdAtMs >= c.catchUpAtMs) {
        ending = { kind: 'caught-up', why: `created_at ${classified.createdAt}` };
      }
      break;
    }
    case 'bad':
      frames.bad += 1;
      if (via === 'stream') s.quietFromMs = frame.receivedAt;
      log(fx, 'warn', { event: classified.event, reason: classified.reason }, 'SSE frame quarantined');
      item = bufferedItem(classified, frame);
      break;
    case 'poke': {
      frames.poke += 1;
      c.pokesWithoutData += 1;
      // The poke's `ts` is the platform's clock: remember how far it is from ours.
      if (classified.tsMs !== undefined) s.platformOffsetMs = classified.tsMs - frame.receivedAt;
      if (via === 'stream') s.lastPokeAtMs = frame.receivedAt;
      const stamped = classified.tsMs ?? frame.receivedAt + (s.platformOffsetMs ?? 0);
      // Nothing else flows and nothing of this connection is uncommitted: everything it was sent before
      // this poke is committed (or on its way, in order, before any later cursor).
      if ((via === 'stream' || s.options.role === 'pass') && s.buffer.length === 0 && !s.unsaved) {
        s.quietThroughMs = stamped;
        after = 'quiet';
      }
      ending = pokeEnds(s, c, stamped);
      break;
    }
    case 'other':
      frames.other += 1;
      countOther(s, classified.event);
      log(fx, 'debug', { event: classified.event }, 'SSE frame with another event name ignored');
      break;
  }
  // The connection's end commits what it buffered; until then the batch commits when it is due.
  if (ending && after === 'if-due') after = 'none';
  if (takeIntoBatch(s, fx, now, via, item, after) && after === 'quiet') c.commitStartedAt = now;
  if (ending) endConnection(c, fx, ending);
}

/** Whether a poke ends its connection: idle hygiene on the main stream, or nothing more flows past T. */
function pokeEnds(s: MachineState, c: ConnectionState, stamped: number): ConnectionEnd | undefined {
  const { idleHygiene, quietPokes } = s.options;
  if (c.via === 'stream' && idleHygiene.enabled && c.pokesWithoutData >= idleHygiene.maxPokesWithoutData) {
    return { kind: 'idle' };
  }
  if (c.catchUpAtMs === undefined) return undefined;
  // The platform pokes when nothing else flows: pokes stamped at or after T say everything created
  // before T has been sent. One alone may race a backlog the server is still preparing.
  c.pokesAfterCatchUp = stamped >= c.catchUpAtMs ? c.pokesAfterCatchUp + 1 : 0;
  if (quietPokes <= 0 || c.pokesAfterCatchUp < quietPokes) return undefined;
  const why = `${c.pokesAfterCatchUp} pokes since ${new Date(c.catchUpAtMs).toISOString()}: nothing more flows`;
  // A pass has then read everything; a replay has not handed off (the recipe ignores pokes).
  return s.options.role === 'pass' ? { kind: 'caught-up', why } : { kind: 'quiet', why };
}

/**
 * Buffers a frame without acting on it (no state decisions), for frames left over at a close (`readFrame`
 * hands over the frame it classified already).
 */
export function keepFrame(
  s: MachineState,
  c: ConnectionState,
  fx: Effect[],
  now: number,
  frame: SseFrame,
  classified: ClassifiedFrame = classifyFrame(frame),
): void {
  const { via } = c;
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  c.lastFrame = frame.type === 'oversized' ? 'oversized' : classified.kind;
  s.counters.frames[classified.kind] += 1;
  let item = bufferedItem(classified, frame);
  if (classified.kind === 'data' && belowReplayFloor(s, via, classified.createdAtMs)) {
    s.counters.replaySkipped += 1;
    item = undefined;
  } else if (item) {
    if (via === 'stream') s.quietFromMs = frame.receivedAt;
  } else if (classified.kind === 'other') {
    countOther(s, classified.event);
  }
  takeIntoBatch(s, fx, now, via, item, 'none');
}

/** A replayed data frame created before what was already committed (`replayFloorMs`): not written again. */
function belowReplayFloor(s: MachineState, via: StreamVia, createdAtMs: number | undefined): boolean {
  return (
    via === 'replay' &&
    s.replayFloorMs !== undefined &&
    createdAtMs !== undefined &&
    createdAtMs < s.replayFloorMs
  );
}

/** What a data or bad frame puts in the micro-batch (nothing for pokes and other events). */
function bufferedItem(classified: ClassifiedFrame, frame: SseFrame): DataFrame | undefined {
  const { receivedAt } = frame;
  // The data's length in UTF-16 units, near enough its bytes for the batch's size bound.
  const bytes = frame.type === 'event' ? frame.data.length : frame.excerpt.length;
  if (classified.kind === 'data') {
    return { kind: 'data', payload: classified.payload, createdAt: classified.createdAt, receivedAt, bytes };
  }
  if (classified.kind === 'bad')
    return { kind: 'bad', text: classified.text, reason: classified.reason, receivedAt, bytes };
  return undefined;
}

function countOther(s: MachineState, event: string): void {
  s.counters.otherEvents[event] = (s.counters.otherEvents[event] ?? 0) + 1;
}
