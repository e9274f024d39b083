/**
 * The consumer's timing rules with an injected clock (no sleeps, no sockets): the minimum reconnect
 * delay after any disconnect and through 422 storms, the back-off cap, staleness after three missed
 * pokes, what counts as idle, and the two ways a replay ends (hand-off on the platform's clock, or the
 * bounded time with the gap reported). Time moves only when a test calls `clock.advance`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CLOCK_ESTIMATE_TOLERANCE_MS } from '../../src/stream/consumer-cursor.ts';
import type { StreamConsumerOptionsInput } from '../../src/stream/consumer-options.ts';
import { quietForMs, reconnectDelay } from '../../src/stream/consumer-waits.ts';
import { StreamConsumer } from '../../src/stream/stream-consumer.ts';
import type { DataFrame, StreamState } from '../../src/stream/types.ts';
import type { Clock } from '../../src/time/clock.ts';
import type { StreamCursorValue, StreamGap } from '../../src/warehouse/cursors.ts';
import { rawRecord, sseFrame } from '../helpers/fixtures/index.ts';

const START = Date.parse('2026-05-20T12:00:00.000Z');

/** A clock whose sleeps resolve only when `advance` passes their wake time. */
class ManualClock implements Clock {
  t = START;
  #timers: { at: number; resolve: () => void }[] = [];

  now = (): number => this.t;

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = { at: this.t + Math.max(0, ms), resolve };
      this.#timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.#timers = this.#timers.filter((x) => x !== timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  /** Moves time forward by `ms`, waking each sleeper in order and letting the consumer react. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await settle();
    while (true) {
      const due = this.#timers.filter((x) => x.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((x) => x !== due);
      this.t = Math.max(this.t, due.at);
      due.resolve();
      await settle();
    }
    this.t = target;
    await settle();
  }
}

/** Lets pending promise callbacks and I/O turns run (the consumer's awaits), without waiting on time. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** An SSE body the test writes into. */
class Body {
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  readonly stream = new ReadableStream<Uint8Array>({
    start: (controller) => {
      this.#controller = controller;
    },
  });
  #encoder = new TextEncoder();
  #closed = false;

  send(event: string, data: unknown): void {
    if (this.#closed) return;
    this.#controller.enqueue(this.#encoder.encode(sseFrame(event, data)));
  }

  end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.close();
  }
}

type Script = 'ok' | 422;

function rebalancing(): Error {
  return Object.assign(new Error('stream connect answered 422'), { status: 422, retryable: true });
}

function harness(
  options: StreamConsumerOptionsInput = {},
  {
    cursor = null,
    random = () => 0,
    connects = [],
  }: { cursor?: StreamCursorValue | null; random?: () => number; connects?: Script[] } = {},
) {
  const clock = new ManualClock();
  const streams: Body[] = [];
  const replays: { date: string; body: Body }[] = [];
  const connectAttempts: number[] = [];
  const transitions: { from: StreamState; to: StreamState; reason: string; at: number }[] = [];
  const commits: { frames: DataFrame[]; cursor: StreamCursorValue }[] = [];
  const gaps: StreamGap[] = [];
  const consumer = new StreamConsumer(
    {
      openStream: async () => {
        connectAttempts.push(clock.now());
        if ((connects.shift() ?? 'ok') === 422) throw rebalancing();
        const body = new Body();
        streams.push(body);
        return { body: body.stream as unknown as AsyncIterable<Uint8Array> };
      },
      openReplay: async (date) => {
        const body = new Body();
        replays.push({ date, body });
        return { body: body.stream as unknown as AsyncIterable<Uint8Array> };
      },
      commit: async (frames, cp) => {
        commits.push({ frames: [...frames], cursor: cp });
      },
      loadCursor: async () => cursor,
      onGap: (gap) => {
        gaps.push(gap);
      },
      onStateChange: (from, to, reason) => transitions.push({ from, to, reason, at: clock.now() }),
      clock,
      random,
    },
    { heartbeatCommitMs: 3_600_000, ...options },
  );
  const controller = new AbortController();
  let done: Promise<void> | undefined;
  return {
    clock,
    consumer,
    streams,
    replays,
    connectAttempts,
    transitions,
    commits,
    gaps,
    async start() {
      done = consumer.run(controller.signal);
      await settle();
    },
    async stop() {
      controller.abort();
      await clock.advance(0);
      await done;
    },
    /** The delay announced by the last `backing_off` transition. */
    lastDelay(): number {
      const last = transitions.filter((t) => t.to === 'backing_off').at(-1);
      return Number(/retry in (\d+) ms/.exec(last?.reason ?? '')?.[1]);
    },
    /** A poke stamped with the platform's clock, `skewMs` ahead of ours. */
    poke(body: Body, skewMs = 0) {
      body.send('poke', { ts: new Date(clock.now() + skewMs).toISOString(), stream: 's1' });
    },
  };
}

function record(id: string, createdAtMs: number) {
  return rawRecord('measurement', { id, created_at: new Date(createdAtMs).toISOString() });
}

describe('reconnectDelay', () => {
  const options = { minMs: 2_000, baseMs: 1_000, factor: 2 };
  it('never comes before the minimum, never above the cap, and grows with the attempts', () => {
    fc.assert(
      fc.property(fc.nat(40), fc.double({ min: 0, max: 0.999_999, noNaN: true }), (attempt, r) => {
        const delay = reconnectDelay(attempt, options, 15_000, () => r);
        expect(delay).toBeGreaterThanOrEqual(2_000);
        expect(delay).toBeLessThan(15_000);
      }),
    );
    expect(reconnectDelay(0, options, 15_000, () => 0.999)).toBe(2_999);
    expect(reconnectDelay(3, options, 15_000, () => 0.5)).toBe(6_000);
    expect(reconnectDelay(30, options, 15_000, () => 0.999)).toBe(14_987);
  });
  it('a cap below the minimum wins (the cap is what the stale rule tolerates)', () => {
    expect(reconnectDelay(0, options, 500, () => 0.9)).toBe(500);
  });
});

describe('quietForMs', () => {
  const base = { state: 'live' as const, pendingFrames: 0, quietFromMs: 1_000, lastPokeAtMs: 9_000 };
  it('is the span from the last data (or the connect) to the last poke after it', () => {
    expect(quietForMs(base)).toBe(8_000);
  });
  it('is zero without a poke after the last data, with frames pending, or when not live', () => {
    expect(quietForMs({ ...base, lastPokeAtMs: 500 })).toBe(0);
    expect(quietForMs({ ...base, lastPokeAtMs: undefined })).toBe(0);
    expect(quietForMs({ ...base, pendingFrames: 1 })).toBe(0);
    for (const state of ['connecting', 'backing_off', 'stale', 'replaying', 'stopped'] as const)
      expect(quietForMs({ ...base, state })).toBe(0);
  });
});

describe('StreamConsumer timing rules (injected clock)', () => {
  it('waits at least the minimum delay after a server close, and keeps it through a 422 storm', async () => {
    const h = harness({}, { connects: ['ok', 422, 422, 422, 'ok'], random: () => 0 });
    await h.start();
    expect(h.consumer.state).toBe('live');
    h.streams[0]!.end();
    await h.clock.advance(0);
    expect(h.consumer.state).toBe('backing_off');
    const closedAt = h.clock.now();
    await h.clock.advance(1_999);
    expect(h.connectAttempts).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.connectAttempts).toHaveLength(2);
    // Each 422 again waits the minimum (jitter 0 here), not a smaller first step.
    for (let i = 0; i < 3; i += 1) {
      expect(h.lastDelay()).toBe(2_000);
      await h.clock.advance(2_000);
    }
    expect(h.consumer.state).toBe('live');
    const waits = h.connectAttempts
      .slice(1)
      .map((at, i) => at - (i === 0 ? closedAt : h.connectAttempts[i]!));
    expect(waits).toEqual([2_000, 2_000, 2_000, 2_000]);
    expect(h.consumer.counters().rebalancing).toBe(3);
    await h.stop();
  });

  it('grows the jittered back-off through a storm but never above the cap (clamped to staleAfterMs)', async () => {
    const h = harness(
      { backoff: { capMs: 60_000 } },
      { connects: [422, 422, 422, 422, 422, 422, 422, 'ok'], random: () => 0.999 },
    );
    await h.start();
    const delays: number[] = [];
    while (h.consumer.state !== 'live') {
      delays.push(h.lastDelay());
      await h.clock.advance(h.lastDelay());
    }
    expect(delays).toEqual([2_999, 3_998, 5_996, 9_992, 14_987, 14_987, 14_987]);
    await h.stop();
  });

  it('calls a connection stale after 15 s without any frame, counted from the last poke', async () => {
    const h = harness();
    await h.start();
    const body = h.streams[0]!;
    await h.clock.advance(5_000);
    h.poke(body);
    await h.clock.advance(14_999);
    expect(h.consumer.state).toBe('live');
    await h.clock.advance(1);
    expect(h.transitions.find((t) => t.to === 'stale')).toMatchObject({
      from: 'live',
      reason: 'no frame for 15000 ms',
      at: START + 20_000,
    });
    await h.stop();
  });

  it('is idle only while live and poked without data; silence, back-off and pending frames are not', async () => {
    const h = harness({ microBatch: { maxWaitMs: 250 } });
    await h.start();
    const body = h.streams[0]!;
    expect(h.consumer.quietForMs()).toBe(0);
    await h.clock.advance(5_000);
    h.poke(body);
    await h.clock.advance(0);
    expect(h.consumer.quietForMs()).toBe(5_000);
    await h.clock.advance(5_000);
    h.poke(body);
    await h.clock.advance(0);
    expect(h.consumer.quietForMs()).toBe(10_000);
    // Data: pending until committed, and the quiet span starts again from it.
    body.send('data', record('r1', h.clock.now() - 100));
    await h.clock.advance(0);
    expect(h.consumer.quietForMs()).toBe(0);
    await h.clock.advance(250);
    expect(h.commits.flatMap((c) => c.frames)).toHaveLength(1);
    expect(h.consumer.quietForMs()).toBe(0);
    await h.clock.advance(4_750);
    h.poke(body);
    await h.clock.advance(0);
    expect(h.consumer.quietForMs()).toBe(5_000);
    // Silence: no poke, so the quiet span does not grow, however long the wait.
    await h.clock.advance(14_000);
    expect(h.consumer.quietForMs()).toBe(5_000);
    await h.clock.advance(1_000);
    expect(h.consumer.state).toBe('backing_off');
    expect(h.consumer.quietForMs()).toBe(0);
    await h.clock.advance(h.lastDelay());
    expect(h.consumer.state).toBe('live');
    expect(h.consumer.quietForMs()).toBe(0);
    await h.stop();
  });

  it('a replay is not handed off by pokes; it hands off at created_at >= T on the platform clock', async () => {
    // Our clock is an hour behind the platform's: T from our clock would end the replay an hour early.
    const skew = 3_600_000;
    // quietPokes high: this is about the hand-off, not about giving a quiet replay up.
    const h = harness({ gapAfterMs: 1_000, quietPokes: 1_000 }, { random: () => 0 });
    await h.start();
    const stream = h.streams[0]!;
    await h.clock.advance(5_000);
    h.poke(stream, skew);
    await h.clock.advance(1_000);
    stream.end();
    const droppedAt = h.clock.now();
    await h.clock.advance(2_000);
    expect(h.consumer.state).toBe('replaying');
    const replay = h.replays[0]!.body;
    for (let i = 0; i < 5; i += 1) {
      await h.clock.advance(5_000);
      h.poke(replay, skew);
    }
    await h.clock.advance(0);
    expect(h.consumer.state).toBe('replaying');
    // Created after T on our clock, before it on the platform's: not the hand-off.
    replay.send('data', record('old', droppedAt + 60_000));
    await h.clock.advance(0);
    expect(h.consumer.state).toBe('replaying');
    replay.send('data', record('handoff', droppedAt + skew - 1_000 + 1));
    await h.clock.advance(0);
    expect(h.transitions.find((t) => t.from === 'replaying')).toMatchObject({
      to: 'connecting',
      reason: expect.stringMatching(/^replay caught up \(created_at /),
    });
    // The drop is an unclean end (reported for the reconciliation stream); the replay handed off: no other.
    expect(h.gaps.map((g) => g.reason)).toEqual(['dropped']);
    expect(h.commits.flatMap((c) => c.frames).map((f) => (f.kind === 'data' ? f.payload : null))).toEqual([
      expect.objectContaining({ id: 'old' }),
      expect.objectContaining({ id: 'handoff' }),
    ]);
    await h.stop();
  });

  it('after a restart, T is the stored disconnect put on the platform clock with the stored offset', async () => {
    const skew = 3_600_000;
    const disconnectedAt = START - 600_000;
    const h = harness(
      {},
      {
        cursor: {
          lastLiveAt: new Date(disconnectedAt).toISOString(),
          lastDisconnectAt: new Date(disconnectedAt).toISOString(),
          platformOffsetMs: skew,
        },
      },
    );
    await h.start();
    expect(h.consumer.state).toBe('replaying');
    const replay = h.replays[0]!.body;
    replay.send('data', record('before-t', disconnectedAt + 1_800_000));
    await h.clock.advance(0);
    expect(h.consumer.state).toBe('replaying');
    replay.send('data', record('at-t', disconnectedAt + skew));
    await h.clock.advance(0);
    expect(h.transitions.find((t) => t.from === 'replaying')?.reason).toBe(
      `replay caught up (created_at ${new Date(disconnectedAt + skew).toISOString()})`,
    );
    // The offset travels on with the cursor.
    expect(h.commits.at(-1)?.cursor.platformOffsetMs).toBe(skew);
    await h.stop();
  });

  it('a replay that does not hand off within replayTimeoutMs reports the gap and goes back to the stream', async () => {
    const gapStart = START - 3_600_000;
    const h = harness(
      { replayTimeoutMs: 30_000, quietPokes: 1_000 },
      { cursor: { lastLiveAt: new Date(gapStart).toISOString() } },
    );
    await h.start();
    expect(h.consumer.state).toBe('replaying');
    const replay = h.replays[0]!.body;
    replay.send('data', record('before-t', gapStart - 5_000));
    for (let i = 0; i < 5; i += 1) {
      await h.clock.advance(5_000);
      h.poke(replay);
    }
    await h.clock.advance(4_999);
    expect(h.consumer.state).toBe('replaying');
    await h.clock.advance(1);
    // Estimated platform times err on the safe side: a gap's start earlier, its end later.
    const tolerance = CLOCK_ESTIMATE_TOLERANCE_MS;
    expect(h.gaps).toEqual([
      // The cursor was live when its process stopped: a crash.
      {
        from: new Date(gapStart - tolerance).toISOString(),
        to: new Date(START + tolerance).toISOString(),
        reason: 'crash',
      },
      {
        from: new Date(gapStart - tolerance).toISOString(),
        to: new Date(START + 30_000 + tolerance).toISOString(),
        reason: 'replay-timed-out',
      },
    ]);
    expect(h.transitions.find((t) => t.from === 'replaying')).toMatchObject({
      to: 'connecting',
      reason: expect.stringMatching(/^replay timed out after 30000 ms/),
    });
    expect(h.consumer.state).toBe('live');
    expect(h.commits.flatMap((c) => c.frames)).toHaveLength(1);
    await h.stop();
  });

  it('a replay the server ends before the hand-off is retried, not taken as caught up', async () => {
    const gapStart = START - 3_600_000;
    const h = harness({}, { cursor: { lastLiveAt: new Date(gapStart).toISOString() }, random: () => 0 });
    await h.start();
    h.replays[0]!.body.end();
    await h.clock.advance(0);
    expect(h.transitions.at(-1)).toMatchObject({
      from: 'replaying',
      to: 'backing_off',
      reason: expect.stringMatching(/^replay ended before the hand-off; retry in 2000 ms/),
    });
    await h.clock.advance(2_000);
    expect(h.replays).toHaveLength(2);
    expect(h.consumer.counters().replaysCaughtUp).toBe(0);
    await h.stop();
  });
});
