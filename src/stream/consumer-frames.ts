/**
 * What a frame does to the consumer's state (pure; part of the transition function): counted, buffered
 * for the next micro-batch, and possibly the end of its connection (the replay's hand-off, idle
 * hygiene's last poke, the replay's deadline). Frames that arrive after the end was decided are only
 * kept (`keepFrame`): they were fully received and the platform counts them as delivered.
 */
import { classifyFrame } from './classify-frame.ts';
import type { ConnectionEnd, ConnectionState, Effect, MachineState } from './consumer-machine.ts';
import { flush, notePlatformTime, parseTime, push } from './consumer-position.ts';
import type { ClassifiedFrame, DataFrame, SseFrame } from './types.ts';

/** Decides that the open connection ends; the driver closes it and feeds `closed`. */
export function endConnection(c: ConnectionState, fx: Effect[], end: ConnectionEnd): void {
  c.ending = end;
  fx.push({ kind: 'close' });
}

export function readFrame(
  s: MachineState,
  c: ConnectionState,
  fx: Effect[],
  now: number,
  frame: SseFrame,
): void {
  const { via } = c;
  // Checked per frame too: a replay that keeps sending data never reaches the timer.
  if (now >= c.deadline) {
    endConnection(c, fx, { kind: 'timed-out' });
    keepFrame(s, c, now, frame);
    return;
  }
  if (!c.delivered) {
    // A connection that delivers is healthy again: the next back-off starts small.
    c.delivered = true;
    s.attempt = 0;
    s.rateLimitAttempt = 0;
  }
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  const classified = classifyFrame(frame);
  c.lastFrame = frame.type === 'oversized' ? 'oversized' : classified.kind;
  const frames = s.counters.frames;
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
      // in a row start again. A replay restarts from its date, so it does not.
      if (s.options.role === 'pass') s.replayFailures = 0;
      const createdAtMs = parseTime(classified.createdAt);
      if (belowReplayFloor(s, via, createdAtMs)) s.counters.replaySkipped += 1;
      else push(s, now, via, bufferedItem(classified, frame)!);
      if (c.catchUpAtMs !== undefined && createdAtMs !== undefined && createdAtMs >= c.catchUpAtMs) {
        endConnection(c, fx, { kind: 'caught-up', why: `created_at ${classified.createdAt}` });
        return;
      }
      break;
    }
    case 'bad':
      frames.bad += 1;
      if (via === 'stream') s.quietFromMs = frame.receivedAt;
      fx.push({
        kind: 'log',
        level: 'warn',
        fields: { event: classified.event, reason: classified.reason },
        message: 'SSE frame quarantined',
      });
      push(s, now, via, bufferedItem(classified, frame)!);
      break;
    case 'poke': {
      frames.poke += 1;
      c.pokesWithoutData += 1;
      notePlatformTime(s, classified.payload, frame.receivedAt);
      if (via === 'stream') s.lastPokeAtMs = frame.receivedAt;
      const { idleHygiene, quietPokes } = s.options;
      if (via === 'stream' && idleHygiene.enabled && c.pokesWithoutData >= idleHygiene.maxPokesWithoutData) {
        endConnection(c, fx, { kind: 'idle' });
        return;
      }
      if (c.catchUpAtMs !== undefined) {
        // The platform pokes when nothing else flows: pokes stamped at or after T say everything created
        // before T has been sent. One alone may race a backlog the server is still preparing.
        const stamped = pokeTime(classified.payload) ?? frame.receivedAt + (s.platformOffsetMs ?? 0);
        c.pokesAfterCatchUp = stamped >= c.catchUpAtMs ? c.pokesAfterCatchUp + 1 : 0;
        if (quietPokes > 0 && c.pokesAfterCatchUp >= quietPokes) {
          const why = `${c.pokesAfterCatchUp} pokes since ${new Date(c.catchUpAtMs).toISOString()}: nothing more flows`;
          // A pass has then read everything; a replay has not handed off (the recipe ignores pokes).
          endConnection(
            c,
            fx,
            s.options.role === 'pass' ? { kind: 'caught-up', why } : { kind: 'quiet', why },
          );
          return;
        }
      }
      break;
    }
    case 'other':
      frames.other += 1;
      countOther(s, classified.event);
      fx.push({
        kind: 'log',
        level: 'debug',
        fields: { event: classified.event },
        message: 'SSE frame with another event name ignored',
      });
      break;
  }
  const { microBatch } = s.options;
  if (s.buffer.length >= microBatch.maxFrames) flush(s, fx, now, via, 'count', false);
  else if (s.bufferBytes >= microBatch.maxBytes) flush(s, fx, now, via, 'bytes', false);
  else if (s.buffer.length > 0 && now >= s.bufferSince + microBatch.maxWaitMs)
    flush(s, fx, now, via, 'time', false);
}

/** A replayed data frame created before what was already committed (`replayFloorMs`): not written again. */
function belowReplayFloor(s: MachineState, via: string, createdAtMs: number | undefined): boolean {
  return (
    via === 'replay' &&
    s.replayFloorMs !== undefined &&
    createdAtMs !== undefined &&
    createdAtMs < s.replayFloorMs
  );
}

function pokeTime(payload: unknown): number | undefined {
  return parseTime((payload as { ts?: string } | null)?.ts);
}

/** Buffers a frame without acting on it (no state decisions), for frames left over at a close. */
export function keepFrame(s: MachineState, c: ConnectionState, now: number, frame: SseFrame): void {
  const { via } = c;
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  const classified = classifyFrame(frame);
  c.lastFrame = frame.type === 'oversized' ? 'oversized' : classified.kind;
  s.counters.frames[classified.kind] += 1;
  const item = bufferedItem(classified, frame);
  if (item?.kind === 'data' && belowReplayFloor(s, via, parseTime(item.createdAt))) {
    s.counters.replaySkipped += 1;
  } else if (item) {
    if (via === 'stream') s.quietFromMs = frame.receivedAt;
    push(s, now, via, item);
  } else if (classified.kind === 'other') {
    countOther(s, classified.event);
  }
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
