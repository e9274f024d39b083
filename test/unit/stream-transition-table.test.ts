/**
 * The stream consumer's transition table: every (state, event) pair of the pure transition function
 * (src/stream/next-consumer-state.ts), with the state it leads to and the effects it asks for, or
 * `ignored`. The table is a `Record<StreamState, Record<EventKind, …>>`, so adding a state or an event
 * kind does not compile until each new pair has its expected outcome here (STATE-MACHINE.md, I1).
 */
import { describe, expect, it } from 'vitest';
import {
  type ConsumerEvent,
  type EffectKind,
  EVENT_KINDS,
  type EventKind,
  initialMachineState,
  type MachineState,
  STREAM_STATES,
} from '../../src/stream/consumer-machine.ts';
import { resolveStreamConsumerOptions } from '../../src/stream/consumer-options.ts';
import { next } from '../../src/stream/next-consumer-state.ts';
import type { StreamState } from '../../src/stream/types.ts';

const T0 = Date.parse('2026-05-20T12:00:00.000Z');
const options = resolveStreamConsumerOptions({ gapAfterMs: 300_000, staleAfterMs: 15_000 });

/** Folds events over a state, confirming every commit at once (as the driver does). */
function feed(state: MachineState, ...events: ConsumerEvent[]): MachineState {
  for (const event of events) {
    const { state: s, effects } = next(state, event);
    state = effects.some((e) => e.kind === 'commit')
      ? next(s, { kind: 'committed', now: event.now }).state
      : s;
  }
  return state;
}

const data = (at: number, id: string) => ({
  type: 'event' as const,
  event: 'data',
  data: JSON.stringify({ id, created_at: new Date(at).toISOString() }),
  receivedAt: at,
});

/** One representative state per phase, reached through the transition function itself. */
const stopped = initialMachineState(options);
const connecting = feed(stopped, { kind: 'start', now: T0, cursor: null });
const live = feed(connecting, { kind: 'opened', now: T0 + 10 });
const stale = feed(
  live,
  { kind: 'read-started', now: T0 + 10 },
  { kind: 'tick', now: T0 + 20_000 },
  { kind: 'closed', now: T0 + 20_000, jitter: 0 },
);
const backingOff = feed(connecting, {
  kind: 'open-failed',
  now: T0 + 10,
  failure: 'rebalancing',
  error: new Error('422'),
  message: '422',
  retryAfterMs: undefined,
  jitter: 0,
});
const replaying = feed(
  stopped,
  { kind: 'start', now: T0, cursor: { lastDisconnectAt: new Date(T0 - 3_600_000).toISOString() } },
  { kind: 'continue', now: T0, jitter: 0 },
  { kind: 'replay-claimed', now: T0, granted: true, floorMs: undefined },
  { kind: 'opened', now: T0 + 10 },
);
// A commit failed while live: the connection was closed and the frames are held.
const holding = (() => {
  const reading = feed(live, { kind: 'read-started', now: T0 + 10 });
  const withFrame = next(reading, { kind: 'frame', now: T0 + 20, frame: data(T0 + 20, 'held') }).state;
  const committing = next(withFrame, { kind: 'tick', now: T0 + 300 }).state;
  const failed = next(committing, {
    kind: 'commit-failed',
    now: T0 + 310,
    permanent: false,
    error: new Error('database away'),
    message: 'database away',
    jitter: 0,
  }).state;
  return next(failed, { kind: 'closed', now: T0 + 320, jitter: 0 }).state;
})();
const states: Record<StreamState, MachineState> = {
  stopped,
  connecting,
  live,
  stale,
  backing_off: backingOff,
  replaying,
  holding,
};

/** One representative event per kind, 1 s after `at` (a tick: long after, so the connection is stale). */
function eventOf(kind: EventKind, at: number): ConsumerEvent {
  const now = at + 1_000;
  switch (kind) {
    case 'start':
      return { kind, now, cursor: null };
    case 'open-failed':
      return {
        kind,
        now,
        failure: 'rebalancing',
        error: new Error('422'),
        message: '422',
        retryAfterMs: undefined,
        jitter: 0,
      };
    case 'frame':
      return { kind, now, frame: data(now, 'r1') };
    case 'tick':
      return { kind, now: at + 60_000 };
    case 'continue':
    case 'closed':
      return { kind, now, jitter: 0 };
    case 'commit-failed':
      return {
        kind,
        now,
        permanent: false,
        error: new Error('database away'),
        message: 'database away',
        jitter: 0,
      };
    case 'replay-claimed':
      return { kind, now, granted: true, floorMs: undefined };
    default:
      return { kind, now };
  }
}

type Outcome = 'ignored' | { to: StreamState; effects: EffectKind[] };
const __ = 'ignored';
const to = (state: StreamState, ...effects: EffectKind[]): Outcome => ({ to: state, effects });

// Live and replaying: `stop`, a minute's `tick` (stale) and `disconnected` ask to close; the frame
// (created after T) is the replay's hand-off. `closed` is only expected once a close was asked for.
// `opened` from `connecting` commits: the connection (fresh, no checkpoint) records that it is live, so
// that a crash before its first data commit is found at the next start.
// biome-ignore format: one row per state, one column per event, reads as a table
const table: Record<StreamState, Record<EventKind, Outcome>> = {
  stopped:     { start: to('connecting', 'notify', 'open-stream'), stop: __, continue: __, opened: __, 'open-failed': __, 'read-started': __, frame: __, tick: __, disconnected: __, closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: __ },
  connecting:  { start: __, stop: to('stopped', 'notify'), continue: __, opened: to('live', 'commit', 'notify', 'read'), 'open-failed': to('backing_off', 'log', 'notify', 'sleep'), 'read-started': __, frame: __, tick: __, disconnected: __, closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: __ },
  live:        { start: __, stop: to('live', 'close'), continue: __, opened: __, 'open-failed': __, 'read-started': to('live'), frame: to('live'), tick: to('live', 'close'), disconnected: to('live', 'close'), closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: __ },
  stale:       { start: __, stop: to('stopped', 'notify'), continue: to('backing_off', 'notify', 'sleep'), opened: __, 'open-failed': __, 'read-started': __, frame: __, tick: __, disconnected: __, closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: __ },
  backing_off: { start: __, stop: to('stopped', 'notify'), continue: __, opened: __, 'open-failed': __, 'read-started': __, frame: __, tick: __, disconnected: __, closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: to('connecting', 'notify', 'open-stream') },
  replaying:   { start: __, stop: to('replaying', 'close'), continue: __, opened: __, 'open-failed': __, 'read-started': to('replaying'), frame: to('replaying', 'close'), tick: to('replaying', 'close'), disconnected: to('replaying', 'close'), closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: __ },
  holding:     { start: __, stop: to('stopped', 'commit', 'notify'), continue: to('holding', 'notify', 'sleep'), opened: __, 'open-failed': __, 'read-started': __, frame: __, tick: __, disconnected: __, closed: __, committed: __, 'commit-failed': __, 'replay-claimed': __, slept: to('holding', 'commit', 'continue') },
};

function outcome(state: MachineState, event: ConsumerEvent): Outcome {
  const result = next(state, event);
  if (result.state === state && result.effects.length === 0) return 'ignored';
  return { to: result.state.phase, effects: result.effects.map((e) => e.kind) };
}

describe('the transition table (every state × every event)', () => {
  it('covers every state and every event kind', () => {
    expect(Object.keys(table).sort()).toEqual([...STREAM_STATES].sort());
    for (const row of Object.values(table)) expect(Object.keys(row).sort()).toEqual([...EVENT_KINDS].sort());
  });

  for (const phase of STREAM_STATES) {
    it(`${phase}: each event leads where the table says`, () => {
      const state = states[phase];
      expect(state.phase).toBe(phase);
      const at = state.lastCommitAt;
      for (const kind of EVENT_KINDS) {
        expect({ kind, outcome: outcome(state, eventOf(kind, at)) }).toEqual({
          kind,
          outcome: table[phase][kind],
        });
      }
    });
  }

  it('an ignored event returns the very same state object and no effects', () => {
    const result = next(live, { kind: 'slept', now: T0 });
    expect(result.state).toBe(live);
    expect(result.effects).toEqual([]);
  });

  it('never mutates the state it is given', () => {
    for (const phase of STREAM_STATES) {
      const state = states[phase];
      const before = structuredClone({ ...state, options: undefined });
      for (const kind of EVENT_KINDS) next(state, eventOf(kind, state.lastCommitAt));
      expect(structuredClone({ ...state, options: undefined })).toEqual(before);
    }
  });
});
