/**
 * The timing rules of the pure transition function (src/stream/next-consumer-state.ts), with time
 * given on each event: stale after silence, a gap longer than gapAfterMs goes to replay, the replay's
 * hand-off (created_at ≥ T on the platform's clock) and its deadline, the back-off's floor, growth,
 * cap and reset. A property test feeds random event sequences and checks the invariants of
 * STATE-MACHINE.md that hold after every transition.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CLOCK_ESTIMATE_TOLERANCE_MS } from '../../src/stream/consumer-cursor.ts';
import {
  type ConsumerEvent,
  type Effect,
  EVENT_KINDS,
  initialMachineState,
  type MachineState,
  STREAM_STATES,
  WAITING_EFFECTS,
} from '../../src/stream/consumer-machine.ts';
import {
  resolveStreamConsumerOptions,
  type StreamConsumerOptionsInput,
} from '../../src/stream/consumer-options.ts';
import { framesInOrder } from '../../src/stream/micro-batch.ts';
import { next } from '../../src/stream/next-consumer-state.ts';
import type { SseFrame } from '../../src/stream/types.ts';
import type { StreamCursorValue } from '../../src/warehouse/cursors.ts';

const T0 = Date.parse('2026-05-20T12:00:00.000Z');
const isoOf = (ms: number) => new Date(ms).toISOString();

/** Feeds events one by one, confirming commits at once as the driver does; keeps every effect. */
class Machine {
  state: MachineState;
  effects: Effect[] = [];

  constructor(options: StreamConsumerOptionsInput = {}) {
    this.state = initialMachineState(
      resolveStreamConsumerOptions({ heartbeatCommitMs: 3_600_000, ...options }),
    );
  }

  feed(event: ConsumerEvent): Effect[] {
    const { state, effects } = next(this.state, event);
    this.state = state;
    this.effects.push(...effects);
    if (effects.some((e) => e.kind === 'commit'))
      this.state = next(this.state, { kind: 'committed', now: event.now }).state;
    // The driver grants the replay (no other connection holds it) and goes on with what follows.
    if (effects.at(-1)?.kind === 'claim-replay')
      return [
        ...effects,
        ...this.feed({ kind: 'replay-claimed', now: event.now, granted: true, floorMs: undefined }),
      ];
    return effects;
  }

  notes(): string[] {
    return this.effects.flatMap((e) => (e.kind === 'notify' ? [`${e.from}→${e.to}`] : []));
  }

  sleeps(): number[] {
    return this.effects.flatMap((e) => (e.kind === 'sleep' ? [e.ms] : []));
  }

  /** Starts with `cursor`, opens the stream and starts reading at `now`. */
  live(now = T0, cursor: StreamCursorValue | null = null): this {
    this.feed({ kind: 'start', now, cursor });
    this.feed({ kind: 'opened', now });
    this.feed({ kind: 'read-started', now });
    return this;
  }

  /** Ends the connection being read (the driver's `close` then `closed`). */
  close(now: number, how: ConsumerEvent = { kind: 'disconnected', now }): Effect[] {
    this.feed(how);
    return this.feed({ kind: 'closed', now, jitter: 0 });
  }
}

const poke = (at: number, ts = at): SseFrame => ({
  type: 'event',
  event: 'poke',
  data: JSON.stringify({ ts: isoOf(ts), stream: 's1' }),
  receivedAt: at,
});
const data = (at: number, createdAt: number, id = 'r'): SseFrame => ({
  type: 'event',
  event: 'data',
  data: JSON.stringify({ id, created_at: isoOf(createdAt) }),
  receivedAt: at,
});

const rebalancing = (now: number, jitter = 0): Extract<ConsumerEvent, { kind: 'open-failed' }> => ({
  kind: 'open-failed',
  now,
  failure: 'rebalancing',
  error: new Error('422'),
  message: '422',
  retryAfterMs: undefined,
  jitter,
});

describe('stale after silence (I4)', () => {
  it('a connection silent for staleAfterMs is dropped as stale; one frame less silent is not', () => {
    const m = new Machine({ staleAfterMs: 15_000 }).live();
    expect(m.feed({ kind: 'tick', now: T0 + 14_999 })).not.toContainEqual({ kind: 'close' });
    m.feed({ kind: 'frame', now: T0 + 14_999, frame: poke(T0 + 14_999) });
    // A poke is a sign of life: the silence restarts when the driver waits again.
    m.feed({ kind: 'read-started', now: T0 + 14_999 });
    expect(m.feed({ kind: 'tick', now: T0 + 29_000 })).toEqual([]);
    expect(m.feed({ kind: 'tick', now: T0 + 29_999 })).toEqual([{ kind: 'close' }]);
    m.feed({ kind: 'closed', now: T0 + 29_999, jitter: 0 });
    expect(m.state.phase).toBe('stale');
    m.feed({ kind: 'continue', now: T0 + 29_999, jitter: 0 });
    expect(m.notes()).toEqual(['stopped→connecting', 'connecting→live', 'live→stale', 'stale→backing_off']);
    expect(m.state.counters.staleDetections).toBe(1);
  });

  it('time spent committing a batch is not silence', () => {
    const m = new Machine({ staleAfterMs: 1_000, microBatch: { maxWaitMs: 100 } }).live();
    m.feed({ kind: 'frame', now: T0 + 10, frame: data(T0 + 10, T0) });
    m.feed({ kind: 'read-started', now: T0 + 10 });
    // Fed by hand: the commit's confirmation comes 800 ms later.
    const { state, effects } = next(m.state, { kind: 'tick', now: T0 + 110 });
    expect(effects.map((e) => e.kind)).toEqual(['commit']);
    m.state = next(state, { kind: 'committed', now: T0 + 910 }).state;
    expect(m.feed({ kind: 'tick', now: T0 + 1_500 })).toEqual([]);
    expect(m.feed({ kind: 'tick', now: T0 + 1_810 })).toEqual([{ kind: 'close' }]);
  });
});

describe('gap → replay (I5)', () => {
  it('a drop shorter than gapAfterMs reconnects the stream; longer goes to replay from T', () => {
    const m = new Machine({ gapAfterMs: 300_000 }).live();
    m.feed({ kind: 'frame', now: T0 + 1_000, frame: poke(T0 + 1_000) });
    m.close(T0 + 2_000);
    expect(m.state.gapStartMs).toBe(T0 + 1_000); // the last frame the stream delivered
    m.feed({ kind: 'slept', now: T0 + 1_000 + 300_000 });
    expect(m.state.phase).toBe('connecting');
    m.feed(rebalancing(T0 + 1_000 + 300_000));
    m.feed({ kind: 'slept', now: T0 + 1_000 + 300_001 });
    expect(m.state.phase).toBe('replaying');
    const fx = m.feed({ kind: 'continue', now: T0 + 301_001, jitter: 0 });
    expect(fx).toContainEqual({ kind: 'open-replay', date: '2026-05-20' });
  });

  it('start-up: downtime longer than gapAfterMs since the stored disconnect replays first', () => {
    const m = new Machine({ gapAfterMs: 60_000 });
    m.feed({ kind: 'start', now: T0, cursor: { lastDisconnectAt: isoOf(T0 - 60_001) } });
    expect(m.state.phase).toBe('replaying');
    const short = new Machine({ gapAfterMs: 60_000 });
    short.feed({ kind: 'start', now: T0, cursor: { lastLiveAt: isoOf(T0 - 60_000) } });
    expect(short.state.phase).toBe('connecting');
  });

  it('a clean stop while live opens the gap in the stop commit', () => {
    const m = new Machine().live();
    m.feed({ kind: 'frame', now: T0 + 500, frame: poke(T0 + 500) });
    m.feed({ kind: 'stop', now: T0 + 600 });
    const fx = m.feed({ kind: 'closed', now: T0 + 600, jitter: 0 });
    const commit = fx.find((e) => e.kind === 'commit');
    expect(commit).toMatchObject({ reason: 'stop', cursor: { lastDisconnectAt: isoOf(T0 + 500) } });
    expect(fx.at(-1)).toMatchObject({ kind: 'notify', to: 'stopped' });
  });
});

describe('replay hand-off (I6)', () => {
  const T = T0 - 3_600_000;
  const replaying = (cursor: StreamCursorValue = { lastDisconnectAt: isoOf(T) }) => {
    const m = new Machine({ replayTimeoutMs: 600_000 });
    m.feed({ kind: 'start', now: T0, cursor });
    m.feed({ kind: 'continue', now: T0, jitter: 0 });
    m.feed({ kind: 'opened', now: T0 });
    m.feed({ kind: 'read-started', now: T0 });
    return m;
  };

  it('ends at the first event created at or after T, never at a poke', () => {
    const m = replaying();
    expect(m.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T - 1, 'old') })).toEqual([]);
    // Pokes stamped before T (the replay is still sending the past): never an end.
    for (let i = 0; i < 10; i += 1)
      m.feed({ kind: 'frame', now: T0 + 2 + i, frame: poke(T0 + 2 + i, T - 1) });
    expect(m.state.connection?.ending).toBeUndefined();
    expect(m.feed({ kind: 'frame', now: T0 + 20, frame: data(T0 + 20, T, 'handoff') })).toEqual([
      { kind: 'close' },
    ]);
    // A frame of the same chunk after the hand-off is kept, not lost.
    m.feed({ kind: 'frame', now: T0 + 20, frame: data(T0 + 20, T + 5, 'after') });
    const fx = m.feed({ kind: 'closed', now: T0 + 21, jitter: 0 });
    const commit = fx.find((e) => e.kind === 'commit');
    expect(commit).toMatchObject({ via: 'replay', reason: 'state-change' });
    expect(commit?.kind === 'commit' && commit.frames.length).toBe(3);
    expect(fx.at(-1)).toEqual({ kind: 'open-stream' });
    expect(m.notes().at(-1)).toBe('replaying→connecting');
    expect(m.state.gapStartMs).toBe(T0 + 21); // should the stream stay away, the next gap starts here
  });

  it('T is on the platform clock: the stored offset moves it', () => {
    // The platform ran 10 s ahead: its T is 10 s later, so an event 5 s after our T is no hand-off.
    const m = replaying({ lastDisconnectAt: isoOf(T), platformOffsetMs: 10_000 });
    expect(m.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T + 5_000) })).toEqual([]);
    expect(m.feed({ kind: 'frame', now: T0 + 2, frame: data(T0 + 2, T + 10_000) })).toEqual([
      { kind: 'close' },
    ]);
  });

  it('never hands off at an event already committed, however early T fell', () => {
    // A slow poke made the stored T 2 s early: the newest committed event (created 1 s before the real
    // disconnect) is re-sent by the replay, and is not the hand-off; the first event after it is.
    const newest = T + 2_000;
    const m = replaying({ lastDisconnectAt: isoOf(T), newestCreatedAt: isoOf(newest) });
    expect(m.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, newest, 'stored') })).toEqual([]);
    expect(m.state.connection?.ending).toBeUndefined();
    expect(m.feed({ kind: 'frame', now: T0 + 2, frame: data(T0 + 2, newest + 1, 'new') })).toEqual([
      { kind: 'close' },
    ]);
  });

  it('gives the gap to REST after replayTimeoutMs over all attempts', () => {
    const m = replaying();
    m.feed({ kind: 'frame', now: T0 + 599_999, frame: data(T0 + 599_999, T - 1) });
    expect(m.state.connection?.ending).toBeUndefined();
    m.feed({ kind: 'frame', now: T0 + 600_000, frame: data(T0 + 600_000, T - 1) });
    const fx = m.feed({ kind: 'closed', now: T0 + 600_000, jitter: 0 });
    expect(fx).toContainEqual({
      kind: 'report-gap',
      // Estimated platform times err on the safe side: the start earlier, the end later.
      gap: {
        from: isoOf(T - CLOCK_ESTIMATE_TOLERANCE_MS),
        to: isoOf(T0 + 600_000 + CLOCK_ESTIMATE_TOLERANCE_MS),
        reason: 'replay-timed-out',
      },
    });
    expect(m.state.phase).toBe('connecting');
  });
});

describe('back-off (I7)', () => {
  const options = {
    staleAfterMs: 15_000,
    backoff: { minMs: 2_000, baseMs: 1_000, capMs: 60_000, factor: 2 },
  };

  it('waits at least minMs, doubles the jitter span, never beyond staleAfterMs, and resets on a frame', () => {
    const m = new Machine(options);
    m.feed({ kind: 'start', now: T0, cursor: null });
    for (let i = 0; i < 6; i += 1) {
      m.feed(rebalancing(T0, 0.999_999));
      m.feed({ kind: 'slept', now: T0 });
    }
    expect(m.sleeps()).toEqual([2_999, 3_999, 5_999, 9_999, 14_999, 14_999]);
    m.feed({ kind: 'opened', now: T0 });
    m.feed({ kind: 'frame', now: T0, frame: poke(T0) });
    m.close(T0, { kind: 'disconnected', now: T0 });
    m.feed({ kind: 'slept', now: T0 });
    m.feed(rebalancing(T0, 0.999_999));
    // The drop backed off at attempt 0 (the frame reset it), this 422 at attempt 1.
    expect(m.sleeps().slice(-2)).toEqual([2_000, 3_999]);
    const floor = new Machine(options);
    floor.feed({ kind: 'start', now: T0, cursor: null });
    floor.feed(rebalancing(T0, 0));
    expect(floor.sleeps()).toEqual([2_000]);
  });

  it('honours a Retry-After longer than the delay', () => {
    const m = new Machine(options);
    m.feed({ kind: 'start', now: T0, cursor: null });
    m.feed({ ...rebalancing(T0), failure: 'retry', retryAfterMs: 30_000 });
    expect(m.sleeps()).toEqual([30_000]);
  });

  it('a permanent failure of the stream asks the driver to fail; a refused replay goes to REST', () => {
    const m = new Machine();
    m.feed({ kind: 'start', now: T0, cursor: null });
    const error = new Error('401');
    expect(m.feed({ ...rebalancing(T0), failure: 'permanent', error }).at(-1)).toEqual({
      kind: 'fail',
      error,
    });
    const r = new Machine();
    r.feed({ kind: 'start', now: T0, cursor: { lastDisconnectAt: isoOf(T0 - 3_600_000) } });
    r.feed({ kind: 'continue', now: T0, jitter: 0 });
    const fx = r.feed({ ...rebalancing(T0), failure: 'refused', message: 'replay answered 400' });
    expect(fx).toContainEqual({
      kind: 'report-gap',
      gap: {
        from: isoOf(T0 - 3_600_000 - CLOCK_ESTIMATE_TOLERANCE_MS),
        to: isoOf(T0 + CLOCK_ESTIMATE_TOLERANCE_MS),
        reason: 'replay-unavailable',
      },
    });
    expect(fx.at(-1)).toEqual({ kind: 'open-stream' });
  });
});

describe('429s back off for minutes (I7)', () => {
  it('grows from rateLimitedBaseMs to rateLimitedCapMs, past the stale cap, and honours Retry-After', () => {
    const m = new Machine({
      staleAfterMs: 15_000,
      backoff: { minMs: 2_000, rateLimitedBaseMs: 30_000, rateLimitedCapMs: 900_000 },
    });
    m.feed({ kind: 'start', now: T0, cursor: null });
    for (let i = 0; i < 8; i += 1) {
      m.feed({ ...rebalancing(T0, 0), failure: 'rate-limited' });
      m.feed({ kind: 'slept', now: T0 });
    }
    // Half jitter: at least half of each doubling span (15 s, 30 s, …), capped at 15 minutes.
    expect(m.sleeps()).toEqual([17_000, 32_000, 62_000, 122_000, 242_000, 451_000, 451_000, 451_000]);
    m.feed({ ...rebalancing(T0, 0), failure: 'rate-limited', retryAfterMs: 3_600_000 });
    expect(m.sleeps().at(-1)).toBe(3_600_000);
    expect(m.state.counters.rateLimited).toBe(9);
  });
});

describe('a failed commit stops reading and holds (I11)', () => {
  const failed = (now: number, permanent = false): ConsumerEvent => ({
    kind: 'commit-failed',
    now,
    permanent,
    error: new Error('database away'),
    message: 'database away',
    jitter: 0,
  });

  it('holds the frames of an earlier pipelined write that failed too, first: the machine is their one owner', () => {
    const m = new Machine({ microBatch: { maxFrames: 1 } });
    m.live();
    const earlier = data(T0 + 1, T0 + 1, 'earlier');
    const fx = next(m.state, { kind: 'frame', now: T0 + 2, frame: data(T0 + 2, T0 + 2, 'current') });
    m.state = fx.state;
    const earlierFrame = {
      kind: 'data' as const,
      payload: { id: 'earlier' },
      createdAt: undefined,
      receivedAt: earlier.receivedAt,
      bytes: 1,
    };
    m.feed({
      ...(failed(T0 + 3) as Extract<ConsumerEvent, { kind: 'commit-failed' }>),
      earlier: [earlierFrame],
    });
    const held = m.state.unsaved?.frames.map((f) =>
      f.kind === 'data' ? (f.payload as { id: string }).id : f.kind,
    );
    expect(held).toEqual(['earlier', expect.any(String)]);
    expect(m.state.unsaved?.frames).toHaveLength(2);
  });

  it('closes the connection, reports the unclean end, retries until the commit lands, then reconnects', () => {
    const m = new Machine({ microBatch: { maxFrames: 1 }, commitRetryMaxMs: 8_000 });
    m.live();
    // A one-frame batch asks for a commit; the driver reports that it failed.
    const fx = next(m.state, { kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T0 + 1, 'held') });
    m.state = fx.state;
    expect(fx.effects.map((e) => e.kind)).toEqual(['commit']);
    expect(m.feed(failed(T0 + 2)).map((e) => e.kind)).toEqual(['log', 'close']);
    const closed = m.feed({ kind: 'closed', now: T0 + 3, jitter: 0 });
    expect(closed).toContainEqual({
      kind: 'report-gap',
      gap: expect.objectContaining({ reason: 'commit-failed' }),
    });
    expect(m.state.phase).toBe('holding');
    expect(m.state.unsaved?.frames).toHaveLength(1);
    // The retry fails too: hold again, longer.
    const retry = next(m.state, { kind: 'slept', now: T0 + 1_000 });
    m.state = retry.state;
    expect(retry.effects.map((e) => e.kind)).toEqual(['commit', 'continue']);
    m.feed(failed(T0 + 1_001));
    m.feed({ kind: 'continue', now: T0 + 1_002, jitter: 0 });
    expect(m.state.phase).toBe('holding');
    // The next retry lands: the frames are committed, the stream reconnects.
    m.feed({ kind: 'slept', now: T0 + 3_000 });
    const resumed = m.feed({ kind: 'continue', now: T0 + 3_001, jitter: 0 });
    expect(resumed.at(-1)).toEqual({ kind: 'open-stream' });
    expect(m.state.unsaved).toBeUndefined();
    expect(m.state.cursor.uncleanEnd?.reason).toBe('commit-failed');
    expect(m.sleeps().length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...m.sleeps())).toBeLessThanOrEqual(8_000);
  });

  it('a permanent commit failure fails the run', () => {
    const m = new Machine({ microBatch: { maxFrames: 1 } });
    m.live();
    m.state = next(m.state, { kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T0 + 1) }).state;
    expect(m.feed(failed(T0 + 2, true)).at(-1)).toMatchObject({ kind: 'fail' });
  });
});

describe('unclean ends are reported as gaps (I12)', () => {
  it('a crash found at start-up, a drop, a stale connection, a stop while data flowed; not a stop after a poke', () => {
    const crash = new Machine();
    const fx = crash.feed({
      kind: 'start',
      now: T0,
      cursor: { lastLiveAt: isoOf(T0 - 10_000), newestCreatedAt: isoOf(T0 - 12_000) },
    });
    expect(fx).toContainEqual({
      kind: 'report-gap',
      // From the newest created_at committed (exact), to now (an estimate, taken late).
      gap: { from: isoOf(T0 - 12_000), to: isoOf(T0 + CLOCK_ESTIMATE_TOLERANCE_MS), reason: 'crash' },
    });

    const drop = new Machine().live();
    drop.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T0 + 1) });
    expect(drop.close(T0 + 2)).toContainEqual({
      kind: 'report-gap',
      gap: expect.objectContaining({ reason: 'dropped' }),
    });

    const flowing = new Machine().live();
    flowing.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T0 + 1) });
    flowing.feed({ kind: 'stop', now: T0 + 2 });
    expect(flowing.feed({ kind: 'closed', now: T0 + 2, jitter: 0 })).toContainEqual({
      kind: 'report-gap',
      gap: expect.objectContaining({ reason: 'stopped' }),
    });

    const quiet = new Machine().live();
    quiet.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T0 + 1) });
    quiet.feed({ kind: 'frame', now: T0 + 5_000, frame: poke(T0 + 5_000) });
    quiet.feed({ kind: 'stop', now: T0 + 5_001 });
    const clean = quiet.feed({ kind: 'closed', now: T0 + 5_001, jitter: 0 });
    expect(clean.some((e) => e.kind === 'report-gap')).toBe(false);
    expect(quiet.state.cursor.uncleanEnd).toBeUndefined();
  });
});

describe('pokes past T: a replay is given up, a pass is caught up (I6, I13)', () => {
  const T = T0 - 3_600_000;

  it('quietPokes pokes stamped at or after T give a replay up (replay-quiet), its gap reported', () => {
    const m = new Machine({ quietPokes: 2 });
    m.feed({ kind: 'start', now: T0, cursor: { lastDisconnectAt: isoOf(T) } });
    m.feed({ kind: 'continue', now: T0, jitter: 0 });
    m.feed({ kind: 'opened', now: T0 });
    m.feed({ kind: 'frame', now: T0 + 1, frame: poke(T0 + 1) });
    expect(m.state.connection?.ending).toBeUndefined();
    m.feed({ kind: 'frame', now: T0 + 2, frame: poke(T0 + 2) });
    expect(m.state.connection?.ending).toMatchObject({ kind: 'quiet' });
    const fx = m.feed({ kind: 'closed', now: T0 + 3, jitter: 0 });
    expect(fx).toContainEqual({
      kind: 'report-gap',
      gap: expect.objectContaining({ reason: 'replay-quiet' }),
    });
    expect(m.state.phase).toBe('connecting');
    expect(m.state.counters.replaysCaughtUp).toBe(0);
  });

  it('a pass catches up at an event created at or after its start, or at quietPokes pokes; then stops', () => {
    for (const end of ['data', 'pokes'] as const) {
      const m = new Machine({ role: 'pass', quietPokes: 2 });
      m.feed({ kind: 'start', now: T0, cursor: null });
      expect(m.state.phase).toBe('replaying');
      m.feed({ kind: 'continue', now: T0, jitter: 0 });
      m.feed({ kind: 'opened', now: T0 + 1 });
      expect(m.state.connection?.via).toBe('reconcile');
      m.feed({ kind: 'frame', now: T0 + 2, frame: data(T0 + 2, T0 - 60_000, 'old') });
      if (end === 'data') m.feed({ kind: 'frame', now: T0 + 3, frame: data(T0 + 3, T0 + 1, 'new') });
      else for (const at of [T0 + 3, T0 + 4]) m.feed({ kind: 'frame', now: at, frame: poke(at) });
      const fx = m.feed({ kind: 'closed', now: T0 + 5, jitter: 0 });
      expect(fx.map((e) => e.kind)).toEqual(['commit', 'notify']);
      expect(m.state.phase).toBe('stopped');
      expect(m.state.passOutcome).toBe('caught-up');
      expect(m.state.passReachedMs).toBe(T0);
    }
  });
});

describe('one replay per organization, above a floor (I14)', () => {
  it('a connection whose replay another holds connects at once; replayed data below the floor is not written', () => {
    const T = T0 - 3_600_000;
    const shared = new Machine();
    shared.state = next(shared.state, {
      kind: 'start',
      now: T0,
      cursor: { lastDisconnectAt: isoOf(T) },
    }).state;
    shared.state = next(shared.state, { kind: 'continue', now: T0, jitter: 0 }).state;
    const fx = next(shared.state, { kind: 'replay-claimed', now: T0, granted: false, floorMs: undefined });
    expect(fx.effects.at(-1)).toEqual({ kind: 'open-stream' });
    expect(fx.state.counters.replaysShared).toBe(1);

    const owner = new Machine({ microBatch: { maxFrames: 10, maxWaitMs: 60_000 } });
    owner.state = next(owner.state, {
      kind: 'start',
      now: T0,
      cursor: { lastDisconnectAt: isoOf(T) },
    }).state;
    owner.state = next(owner.state, { kind: 'continue', now: T0, jitter: 0 }).state;
    owner.state = next(owner.state, {
      kind: 'replay-claimed',
      now: T0,
      granted: true,
      floorMs: T - 1_000,
    }).state;
    owner.feed({ kind: 'opened', now: T0 });
    owner.feed({ kind: 'frame', now: T0 + 1, frame: data(T0 + 1, T - 5_000, 'stored-already') });
    owner.feed({ kind: 'frame', now: T0 + 2, frame: data(T0 + 2, T - 500, 'after-the-floor') });
    expect(owner.state.counters.replaySkipped).toBe(1);
    expect(
      framesInOrder(owner.state.buffer).map((f) =>
        f.kind === 'data' ? (f.payload as { id: string }).id : f.kind,
      ),
    ).toEqual(['after-the-floor']);
  });
});

const SIMPLE_KINDS = EVENT_KINDS.filter((k) => k !== 'frame' && k !== 'open-failed' && k !== 'start');
const FAILURES = ['rebalancing', 'rate-limited', 'retry', 'refused', 'permanent'] as const;

/** An event of any kind at `now`: `pick` chooses it, `d` is a data frame's created_at offset. */
function eventAt(now: number, pick: number, d: number): ConsumerEvent {
  const simple = SIMPLE_KINDS.length;
  if (pick < simple) return { kind: SIMPLE_KINDS[pick]!, now, jitter: 0.5 } as ConsumerEvent;
  if (pick < simple + FAILURES.length) return { ...rebalancing(now), failure: FAILURES[pick - simple]! };
  if (pick === simple + FAILURES.length) return { kind: 'frame', now, frame: poke(now) };
  return { kind: 'frame', now, frame: data(now, now + d) };
}
const PICKS = SIMPLE_KINDS.length + FAILURES.length + 2;

describe('invariants after every transition (property)', () => {
  it('I2, I3, I8: commit before announcement, one waiting effect at the end, announcements chain', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 20_000 }),
            fc.nat(PICKS - 1),
            fc.integer({ min: -7_200_000, max: 60_000 }),
          ),
          { minLength: 1, maxLength: 80 },
        ),
        fc.boolean(),
        (steps, withGap) => {
          const m = new Machine({ staleAfterMs: 15_000, gapAfterMs: 60_000, replayTimeoutMs: 120_000 });
          let now = T0;
          m.feed({
            kind: 'start',
            now,
            cursor: withGap ? { lastDisconnectAt: isoOf(T0 - 3_600_000) } : null,
          });
          for (const [dt, pick, d] of steps) {
            now += dt;
            const event = eventAt(now, pick, d);
            const before = m.state;
            const { state, effects } = next(before, event);
            // I8: announcements chain from the old phase to the new one.
            const notes = effects.filter((e) => e.kind === 'notify');
            if (notes.length > 0) {
              expect(notes[0]!.from).toBe(before.phase);
              expect(notes.at(-1)!.to).toBe(state.phase);
            } else expect(state.phase).toBe(before.phase);
            expect(STREAM_STATES).toContain(state.phase);
            // I3: at most one waiting effect, and it is the last; at most one commit.
            const waiting = effects.filter((e) => WAITING_EFFECTS.has(e.kind));
            expect(waiting.length).toBeLessThanOrEqual(1);
            if (waiting.length === 1) expect(effects.at(-1)).toBe(waiting[0]);
            expect(effects.filter((e) => e.kind === 'commit').length).toBeLessThanOrEqual(1);
            // I2: the batch is committed before the state change is announced.
            const commitAt = effects.findIndex((e) => e.kind === 'commit');
            const notifyAt = effects.findIndex((e) => e.kind === 'notify');
            if (commitAt >= 0 && notifyAt >= 0) expect(commitAt).toBeLessThan(notifyAt);
            m.feed(event);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
