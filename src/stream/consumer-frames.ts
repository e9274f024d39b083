/**
 * What a frame does to the consumer's state (pure; part of the transition function): counted, buffered
 * for the next micro-batch, and possibly the end of its connection (the replay's hand-off, idle
 * hygiene's last poke, the replay's deadline). Frames that arrive after the end was decided are only
 * kept (`keepFrame`): they were fully received and the platform counts them as delivered.
 */
import { classifyFrame } from './classify-frame.ts';
import { flush, notePlatformTime, parseTime, push } from './consumer-checkpoint.ts';
import type { ConnectionEnd, ConnectionState, Effect, MachineState } from './consumer-machine.ts';
import type { SseFrame } from './types.ts';

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
  }
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  const classified = classifyFrame(frame);
  const frames = s.counters.frames;
  switch (classified.kind) {
    case 'data': {
      frames.data += 1;
      c.pokesWithoutData = 0;
      if (via === 'stream') {
        s.idleRound = 0;
        s.quietFromMs = frame.receivedAt;
      }
      push(s, now, via, {
        kind: 'data',
        payload: classified.payload,
        createdAt: classified.createdAt,
        receivedAt: frame.receivedAt,
      });
      const createdAtMs = parseTime(classified.createdAt);
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
      push(s, now, via, {
        kind: 'bad',
        text: classified.text,
        reason: classified.reason,
        receivedAt: frame.receivedAt,
      });
      break;
    case 'poke': {
      frames.poke += 1;
      c.pokesWithoutData += 1;
      notePlatformTime(s, classified.payload, frame.receivedAt);
      if (via === 'stream') s.lastPokeAtMs = frame.receivedAt;
      const { idleHygiene } = s.options;
      if (via === 'stream' && idleHygiene.enabled && c.pokesWithoutData >= idleHygiene.maxPokesWithoutData) {
        endConnection(c, fx, { kind: 'idle' });
        return;
      }
      // Pokes never end a replay: one that starts slowly pokes before its first data frame.
      break;
    }
    case 'other':
      frames.other += 1;
      s.counters.otherEvents[classified.event] = (s.counters.otherEvents[classified.event] ?? 0) + 1;
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
  else if (s.buffer.length > 0 && now >= s.bufferSince + microBatch.maxWaitMs)
    flush(s, fx, now, via, 'time', false);
}

/** Buffers a frame without acting on it (no state decisions), for frames left over at a close. */
export function keepFrame(s: MachineState, c: ConnectionState, now: number, frame: SseFrame): void {
  const { via } = c;
  if (via === 'stream') s.lastStreamFrameAt = frame.receivedAt;
  const classified = classifyFrame(frame);
  s.counters.frames[classified.kind] += 1;
  if (via === 'stream' && (classified.kind === 'data' || classified.kind === 'bad'))
    s.quietFromMs = frame.receivedAt;
  if (classified.kind === 'data') {
    push(s, now, via, {
      kind: 'data',
      payload: classified.payload,
      createdAt: classified.createdAt,
      receivedAt: frame.receivedAt,
    });
  } else if (classified.kind === 'bad') {
    push(s, now, via, {
      kind: 'bad',
      text: classified.text,
      reason: classified.reason,
      receivedAt: frame.receivedAt,
    });
  } else if (classified.kind === 'other') {
    s.counters.otherEvents[classified.event] = (s.counters.otherEvents[classified.event] ?? 0) + 1;
  }
}
