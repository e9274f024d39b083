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
import { next } from '../../src/stream/next-consumer-state.ts';
import { resolveStreamConsumerOptions } from '../../src/stream/resolve-consumer-options.ts';
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
const connecting = feed(stopped, { kind: 'start', now: T0, checkpoint: null });
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
  { kind: 'start', now: T0, checkpoint: { lastDisconnectAt: new Date(T0 - 3_600_000).toISOString() } },
  { kind: 'continue', now: T0, jitter: 0 },
  { kind: 'opened', now: T0 + 10 },
);
const states: Record<StreamState, MachineState> = {
  stopped,
  connecting,
  live,
  stale,
  backing_off: backingOff,
  replaying,
};

/** One representative event per kind, 1 s after `at` (a tick: long after, so the connection is stale). */
function eventOf(kind: EventKind, at: number): ConsumerEvent {
  const now = at + 1_000;
  switch (kind) {
    case 'start':
      return { kind, now, checkpoint: null };
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
    default:
      return { kind, now };
  }
}

type Outcome = 'ignored' | { to: StreamState; effects: EffectKind[] };

const table: Record<StreamState, Record<EventKind, Outcome>> = {
  stopped: {
    start: { to: 'connecting', effects: ['notify', 'open-stream'] },
    stop: 'ignored',
    continue: 'ignored',
    opened: 'ignored',
    'open-failed': 'ignored',
    'read-started': 'ignored',
    frame: 'ignored',
    tick: 'ignored',
    disconnected: 'ignored',
    closed: 'ignored',
    committed: 'ignored',
    slept: 'ignored',
  },
  connecting: {
    start: 'ignored',
    stop: { to: 'stopped', effects: ['notify'] },
    continue: 'ignored',
    opened: { to: 'live', effects: ['notify', 'read'] },
    'open-failed': { to: 'backing_off', effects: ['log', 'notify', 'sleep'] },
    'read-started': 'ignored',
    frame: 'ignored',
    tick: 'ignored',
    disconnected: 'ignored',
    closed: 'ignored',
    committed: 'ignored',
    slept: 'ignored',
  },
  live: {
    start: 'ignored',
    stop: { to: 'live', effects: ['close'] },
    continue: 'ignored',
    opened: 'ignored',
    'open-failed': 'ignored',
    'read-started': { to: 'live', effects: [] },
    frame: { to: 'live', effects: [] },
    // a minute of silence: stale
    tick: { to: 'live', effects: ['close'] },
    disconnected: { to: 'live', effects: ['close'] },
    closed: 'ignored',
    committed: 'ignored',
    slept: 'ignored',
  },
  stale: {
    start: 'ignored',
    stop: { to: 'stopped', effects: ['notify'] },
    continue: { to: 'backing_off', effects: ['notify', 'sleep'] },
    opened: 'ignored',
    'open-failed': 'ignored',
    'read-started': 'ignored',
    frame: 'ignored',
    tick: 'ignored',
    disconnected: 'ignored',
    closed: 'ignored',
    committed: 'ignored',
    slept: 'ignored',
  },
  backing_off: {
    start: 'ignored',
    stop: { to: 'stopped', effects: ['notify'] },
    continue: 'ignored',
    opened: 'ignored',
    'open-failed': 'ignored',
    'read-started': 'ignored',
    frame: 'ignored',
    tick: 'ignored',
    disconnected: 'ignored',
    closed: 'ignored',
    committed: 'ignored',
    slept: { to: 'connecting', effects: ['notify', 'open-stream'] },
  },
  replaying: {
    start: 'ignored',
    stop: { to: 'replaying', effects: ['close'] },
    continue: 'ignored',
    opened: 'ignored',
    'open-failed': 'ignored',
    'read-started': { to: 'replaying', effects: [] },
    // created after T: the hand-off
    frame: { to: 'replaying', effects: ['close'] },
    tick: { to: 'replaying', effects: ['close'] },
    disconnected: { to: 'replaying', effects: ['close'] },
    closed: 'ignored',
    committed: 'ignored',
    slept: 'ignored',
  },
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
