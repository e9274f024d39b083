/**
 * The stream consumer against a real SSE server over HTTP (node:http in this file, fetch as client),
 * with small millisecond options and an offset clock for day-long gaps. Assertions wait on state
 * transitions and commits (vi.waitFor), never on wall time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PermanentError } from '../../src/errors/index.ts';
import { CLOCK_ESTIMATE_TOLERANCE_MS, utcDate } from '../../src/stream/consumer-cursor.ts';
import type { StreamConsumerOptionsInput } from '../../src/stream/consumer-options.ts';
import { StreamConsumer } from '../../src/stream/stream-consumer.ts';
import type { CommitMeta, DataFrame, SseSource, StreamState } from '../../src/stream/types.ts';
import type { Clock } from '../../src/time/clock.ts';
import { systemClock } from '../../src/time/clock.ts';
import type { StreamCursorValue, StreamGap } from '../../src/warehouse/cursors.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

/** A scriptable SSE platform: each /connect or /replay request takes the next handler of its script. */
class TestPlatform {
  readonly connect: Handler[] = [];
  readonly replay: Handler[] = [];
  defaultConnect: Handler = pokeForever(20);
  defaultReplay: Handler = answer(500);
  readonly requests: URL[] = [];
  #server: Server;
  baseUrl = '';

  constructor() {
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      this.requests.push(url);
      const handler = url.pathname.endsWith('/connect')
        ? (this.connect.shift() ?? this.defaultConnect)
        : url.pathname === '/replay'
          ? (this.replay.shift() ?? this.defaultReplay)
          : answer(404);
      handler(req, res, url);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  count(path: string): number {
    return this.requests.filter((u) => u.pathname.endsWith(path)).length;
  }
}

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

const poke = () =>
  frame('poke', { ts: new Date().toISOString(), stream: 's1', members: { count: 1, max: 3 } });

/** Writes `text` chunks (one per tick), then keeps the connection open with pokes every `pokeMs` (0: silent). */
function sends(texts: string[], pokeMs = 0, then?: (res: ServerResponse) => void): Handler {
  return (_req, res) => {
    sseHead(res);
    for (const t of texts) res.write(t);
    if (then) then(res);
    if (pokeMs > 0) {
      const timer = setInterval(() => res.write(poke()), pokeMs);
      res.on('close', () => clearInterval(timer));
    }
  };
}

function pokeForever(ms: number): Handler {
  return sends([], ms);
}

function silent(): Handler {
  return sends([]);
}

function answer(status: number): Handler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: `status ${status}` }));
  };
}

/** Sends frames and then cuts the socket (a drop mid-stream). */
function sendsThenDrops(texts: string[]): Handler {
  return (_req, res) => {
    sseHead(res);
    for (const t of texts) res.write(t);
    setTimeout(() => res.socket?.destroy(), 20);
  };
}

async function openSse(url: string, signal: AbortSignal): Promise<SseSource> {
  const res = await fetch(url, { signal });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw Object.assign(
      new Error(`GET ${url.replace(/token=[^&]*/, 'token=[REDACTED]')} answered ${res.status}`),
      {
        status: res.status,
        retryable: res.status === 422 || res.status === 429 || res.status >= 500,
      },
    );
  }
  return { body: res.body as unknown as AsyncIterable<Uint8Array> };
}

interface Commit {
  frames: DataFrame[];
  cursor: StreamCursorValue;
  meta: CommitMeta;
}

interface Harness {
  consumer: StreamConsumer;
  commits: Commit[];
  transitions: { from: StreamState; to: StreamState; reason: string }[];
  gaps: StreamGap[];
  clock: Clock;
  advance(ms: number): void;
  start(): void;
  stop(): Promise<void>;
  done: Promise<void> | undefined;
  path(): string[];
  data(via?: 'stream' | 'replay'): unknown[];
}

const fast: StreamConsumerOptionsInput = {
  staleAfterMs: 1_000,
  backoff: { minMs: 0, baseMs: 20, capMs: 100, factor: 2 },
  microBatch: { maxFrames: 500, maxWaitMs: 20 },
  gapAfterMs: 60_000,
  heartbeatCommitMs: 600_000,
};

let platform: TestPlatform;
let harnesses: Harness[] = [];
/** The next this-many commits fail (a database blip). */
let failCommits = 0;
/** What a failing commit throws (a database outage unless a test says otherwise). */
let commitError: () => Error = () => new Error('database unavailable');

beforeEach(async () => {
  failCommits = 0;
  commitError = () => new Error('database unavailable');
  platform = new TestPlatform();
  await platform.start();
});

afterEach(async () => {
  for (const h of harnesses) await h.stop().catch(() => {});
  harnesses = [];
  await platform.stop();
});

function harness(
  options: StreamConsumerOptionsInput = {},
  cursor: StreamCursorValue | null = null,
  onState?: (to: StreamState, h: Harness) => void,
): Harness {
  let offset = 0;
  const clock: Clock = {
    now: () => Date.now() + offset,
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
  };
  const commits: Commit[] = [];
  const transitions: Harness['transitions'] = [];
  const gaps: StreamGap[] = [];
  const controller = new AbortController();
  const consumer = new StreamConsumer(
    {
      openStream: (signal) => openSse(`${platform.baseUrl}/streams/s1/connect?token=secret-token`, signal),
      openReplay: (date, signal) =>
        openSse(`${platform.baseUrl}/replay?token=secret-token&date=${date}`, signal),
      commit: async (frames, cp, meta) => {
        if (failCommits > 0) {
          failCommits -= 1;
          throw commitError();
        }
        commits.push({ frames: [...frames], cursor: cp, meta });
      },
      loadCursor: async () => cursor,
      onGap: (gap) => {
        gaps.push(gap);
      },
      onStateChange: (from, to, reason) => {
        transitions.push({ from, to, reason });
        onState?.(to, h);
      },
      clock,
      random: () => 0.5,
    },
    { ...fast, ...options },
  );
  const h: Harness = {
    consumer,
    commits,
    transitions,
    gaps,
    clock,
    advance: (ms) => {
      offset += ms;
    },
    done: undefined,
    start() {
      h.done = consumer.run(controller.signal);
    },
    async stop() {
      controller.abort();
      await h.done;
    },
    path: () => transitions.map((t) => t.to),
    data: (via) =>
      commits
        .filter((c) => !via || c.meta.via === via)
        .flatMap((c) => c.frames)
        .filter((f) => f.kind === 'data')
        .map((f) => (f as { payload: unknown }).payload),
  };
  harnesses.push(h);
  return h;
}

const rec = (id: string, createdAt = '2026-01-01T00:00:00.000Z') => ({
  id,
  type: 'measurement',
  created_at: createdAt,
});

describe('StreamConsumer (live)', () => {
  it('commits data frames raw, quarantines bad ones, counts pokes and other events', async () => {
    platform.connect.push(
      sends(
        [
          frame('data', rec('a', '2026-01-01T00:00:01.000Z')),
          poke(),
          frame('rule', { anything: true }),
          frame('data', '{"id":"broken",'),
          frame('connection', { id: 'c1' }),
          frame('data', { id: 'ce1', action: 'create', created_at: '2026-01-01T00:00:03.000Z' }),
        ],
        20,
      ),
    );
    const h = harness();
    h.start();
    await vi.waitFor(() => expect(h.consumer.counters().committedFrames).toBe(3));
    expect(h.data()).toEqual([
      rec('a', '2026-01-01T00:00:01.000Z'),
      { id: 'ce1', action: 'create', created_at: '2026-01-01T00:00:03.000Z' },
    ]);
    const bad = h.commits.flatMap((c) => c.frames).find((f) => f.kind === 'bad');
    expect(bad).toMatchObject({ kind: 'bad', text: '{"id":"broken",' });
    expect(h.commits.every((c) => c.meta.via === 'stream')).toBe(true);
    const counters = h.consumer.counters();
    expect(counters.frames).toMatchObject({ data: 2, bad: 1, other: 2 });
    expect(counters.frames.poke).toBeGreaterThanOrEqual(1);
    expect(counters.otherEvents).toEqual({ rule: 1, connection: 1 });
    expect(h.consumer.cursor().newestCreatedAt).toBe('2026-01-01T00:00:03.000Z');
    await h.stop();
    expect(h.path()).toEqual(['connecting', 'live', 'stopped']);
    expect(h.consumer.state).toBe('stopped');
  });

  it('micro-batches by count', async () => {
    platform.connect.push(
      sends(
        Array.from({ length: 7 }, (_, i) => frame('data', rec(`r${i}`))),
        20,
      ),
    );
    const h = harness({ microBatch: { maxFrames: 3, maxWaitMs: 60_000 } });
    h.start();
    await vi.waitFor(() => expect(h.consumer.counters().frames.data).toBe(7));
    await vi.waitFor(() => expect(h.commits.filter((c) => c.meta.reason === 'count')).toHaveLength(2));
    expect(h.commits.filter((c) => c.meta.reason === 'count').map((c) => c.frames.length)).toEqual([3, 3]);
    await h.stop();
    const last = h.commits.at(-1)!;
    expect(last.meta.reason).toBe('stop');
    expect(last.frames).toHaveLength(1);
    expect(h.data().map((p) => (p as { id: string }).id)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
  });

  it('micro-batches by time', async () => {
    platform.connect.push(sends([frame('data', rec('t1')), frame('data', rec('t2'))], 20));
    const h = harness({ microBatch: { maxFrames: 500, maxWaitMs: 30 } });
    h.start();
    await vi.waitFor(() => expect(h.commits.some((c) => c.meta.reason === 'time')).toBe(true));
    const timed = h.commits.find((c) => c.meta.reason === 'time')!;
    expect(timed.frames).toHaveLength(2);
  });

  it('on stop, flushes what was fully received and records the disconnect', async () => {
    // An unterminated last frame is not "fully received" and must not be committed.
    platform.connect.push(
      sends(
        [
          frame('data', rec('s1')),
          frame('data', rec('s2')),
          frame('data', rec('s3')),
          'event: data\ndata: {"id":"half',
        ],
        0,
      ),
    );
    const h = harness({ microBatch: { maxFrames: 500, maxWaitMs: 60_000 }, staleAfterMs: 60_000 });
    h.start();
    await vi.waitFor(() => expect(h.consumer.counters().frames.data).toBe(3));
    // The only commit so far: a fresh connection records that it is live (a crash before its first data
    // commit is then found at the next start).
    expect(h.commits).toHaveLength(1);
    expect(h.commits[0]).toMatchObject({ frames: [], meta: { reason: 'state-change' } });
    expect(h.commits[0]?.cursor.lastLiveAt).toEqual(expect.any(String));
    await h.stop();
    expect(h.commits).toHaveLength(2);
    const stop = h.commits[1];
    expect(stop?.meta).toEqual({ via: 'stream', reason: 'stop' });
    expect(stop?.frames.map((f) => (f.kind === 'data' ? (f.payload as { id: string }).id : f.kind))).toEqual([
      's1',
      's2',
      's3',
    ]);
    expect(stop?.cursor.lastDisconnectAt).toEqual(expect.any(String));
    expect(stop?.cursor.lastLiveAt).toEqual(expect.any(String));
    // Stopped while data flowed (the last frame was data, not a poke): what was in flight may be lost.
    expect(stop?.cursor.uncleanEnd?.reason).toBe('stopped');
    expect(h.gaps.map((g) => g.reason)).toEqual(['stopped']);
  });

  it('detects a silent stream as stale and reconnects', async () => {
    platform.connect.push(silent(), sends([frame('data', rec('after-stale'))], 20));
    const h = harness({ staleAfterMs: 150 });
    h.start();
    await vi.waitFor(() => expect(h.data()).toEqual([rec('after-stale')]));
    expect(h.path()).toEqual(['connecting', 'live', 'stale', 'backing_off', 'connecting', 'live']);
    expect(h.consumer.counters()).toMatchObject({ staleDetections: 1, connects: 2, reconnects: 1 });
    // The stale drop was short (< gapAfterMs): no replay.
    expect(platform.count('/replay')).toBe(0);
  });

  it('backs off through a 422 storm with growing delays and goes live', async () => {
    for (let i = 0; i < 5; i += 1) platform.connect.push(answer(422));
    platform.connect.push(sends([frame('data', rec('finally'))], 20));
    const h = harness();
    h.start();
    await vi.waitFor(() => expect(h.data()).toEqual([rec('finally')]));
    expect(h.consumer.counters().rebalancing).toBe(5);
    const delays = h.transitions
      .filter((t) => t.to === 'backing_off')
      .map((t) => Number(/retry in (\d+) ms/.exec(t.reason)?.[1]));
    // Full jitter with random() = 0.5 under caps 20, 40, 80, 100, 100.
    expect(delays).toEqual([10, 20, 40, 50, 50]);
    expect(h.transitions.filter((t) => t.to === 'backing_off').every((t) => /422/.test(t.reason))).toBe(true);
    expect(h.path().at(-1)).toBe('live');
  });

  it('reconnects after a drop mid-stream and opens then closes the gap in the cursor', async () => {
    platform.connect.push(
      sendsThenDrops([frame('data', rec('before'))]),
      sends([frame('data', rec('after'))], 20),
    );
    const h = harness();
    h.start();
    await vi.waitFor(() => expect(h.data()).toEqual([rec('before'), rec('after')]));
    expect(h.path()).toEqual(['connecting', 'live', 'backing_off', 'connecting', 'live']);
    const gapOpened = h.commits.find((c) => c.cursor.lastDisconnectAt !== undefined);
    expect(gapOpened?.meta.reason).toBe('state-change');
    const afterGap = h.commits.at(-1)!;
    expect(afterGap.cursor.lastDisconnectAt).toBeUndefined();
    expect(platform.count('/replay')).toBe(0);
  });

  it('stops with the error on 401', async () => {
    platform.connect.push(answer(401));
    const h = harness();
    h.start();
    await expect(h.done).rejects.toMatchObject({ status: 401 });
    expect(h.path()).toEqual(['connecting', 'stopped']);
    expect(h.transitions.at(-1)?.reason).toMatch(/answered 401/);
    expect(h.transitions.at(-1)?.reason).toMatch(/token=\[REDACTED\]/);
    expect(h.transitions.at(-1)?.reason).not.toMatch(/secret-token/);
  });

  it('connection hygiene: drops after N pokes without data, with growing delays reset by data', async () => {
    platform.connect.push(
      pokeForever(10),
      pokeForever(10),
      pokeForever(10),
      sends([frame('data', rec('wake'))], 10),
    );
    // The 5th connection stays quiet (no pokes), so the count of drops settles at 4.
    platform.defaultConnect = silent();
    const h = harness({
      staleAfterMs: 60_000,
      idleHygiene: { enabled: true, maxPokesWithoutData: 3, delaysMs: [10, 20, 40] },
    });
    h.start();
    await vi.waitFor(() => expect(h.consumer.counters().connects).toBe(5));
    expect(h.consumer.counters().idleDrops).toBe(4);
    expect(h.data()).toEqual([rec('wake')]);
    const idleDelays = h.transitions
      .filter((t) => t.to === 'backing_off')
      .map((t) => Number(/retry in (\d+) ms/.exec(t.reason)?.[1]));
    // Drops 1-3 grow; the 4th connection delivered data, so its drop starts over.
    expect(idleDelays).toEqual([10, 20, 40, 10]);
    expect(h.transitions.filter((t) => t.to === 'backing_off').every((t) => /idle/.test(t.reason))).toBe(
      true,
    );
    expect(platform.count('/replay')).toBe(0);
  });
});

describe('StreamConsumer (frames left in a chunk)', () => {
  it('keeps data that arrived in the same chunk as the frame that ended the connection', async () => {
    platform.connect.push(sends([poke() + poke() + poke() + frame('data', rec('same-chunk'))], 0));
    platform.defaultConnect = silent();
    const h = harness({
      staleAfterMs: 60_000,
      idleHygiene: { enabled: true, maxPokesWithoutData: 3, delaysMs: [10] },
    });
    h.start();
    await vi.waitFor(() => expect(h.consumer.counters().connects).toBe(2));
    expect(h.consumer.counters().idleDrops).toBe(1);
    expect(h.data()).toEqual([rec('same-chunk')]);
  });
});

describe('StreamConsumer (commits)', () => {
  it('retries a failing commit without losing frames', async () => {
    failCommits = 2;
    platform.connect.push(sends([frame('data', rec('kept'))], 20), pokeForever(20));
    const h = harness({ commitRetryMaxMs: 40 });
    h.start();
    await vi.waitFor(() => expect(h.data()).toEqual([rec('kept')]));
    await vi.waitFor(() => expect(h.consumer.state).toBe('live'));
    expect(h.path()).toContain('holding');
  });

  it('when commits keep failing, stops reading, holds the frames and lands them once the database is back', async () => {
    failCommits = 100;
    platform.connect.push(sends([frame('data', rec('held'))], 20));
    platform.connect.push(sends([frame('data', rec('after'))], 20));
    const h = harness({ commitRetryMaxMs: 40 });
    h.start();
    await vi.waitFor(() => expect(h.transitions.some((t) => t.to === 'holding')).toBe(true));
    // Reading stopped: the connection is closed while held (no second connect yet).
    expect(h.consumer.counters().connects).toBe(1);
    expect(h.gaps.map((g) => g.reason)).toContain('commit-failed');
    failCommits = 0;
    await vi.waitFor(() => expect(h.data()).toEqual([rec('held'), rec('after')]));
    expect(h.consumer.counters().commitFailures).toBeGreaterThan(0);
    expect(h.consumer.state).toBe('live');
  });

  it('does not retry a commit that failed permanently', async () => {
    failCommits = 100;
    commitError = () => new PermanentError('batch refused');
    platform.connect.push(sends([frame('data', rec('refused'))], 20));
    const h = harness();
    h.start();
    await expect(h.done).rejects.toThrow('batch refused');
    expect(failCommits).toBe(99);
    expect(h.consumer.state).toBe('stopped');
  });

  it('persists lastLiveAt with heartbeat commits while only pokes arrive', async () => {
    platform.connect.push(pokeForever(10));
    const h = harness({ heartbeatCommitMs: 50 });
    h.start();
    await vi.waitFor(() =>
      expect(h.commits.filter((c) => c.meta.reason === 'heartbeat').length).toBeGreaterThan(1),
    );
    const beats = h.commits.filter((c) => c.meta.reason === 'heartbeat');
    expect(beats.every((c) => c.frames.length === 0 && c.cursor.lastLiveAt)).toBe(true);
    expect(Date.parse(beats.at(-1)!.cursor.lastLiveAt!)).toBeGreaterThan(
      Date.parse(beats[0]!.cursor.lastLiveAt!),
    );
  });
});

describe('StreamConsumer.step', () => {
  it('steps one transition at a time', async () => {
    platform.connect.push(answer(422), sendsThenDrops([frame('data', rec('stepped'))]));
    const h = harness();
    const signal = new AbortController().signal;
    expect(await h.consumer.step(signal)).toBe('connecting');
    expect(await h.consumer.step(signal)).toBe('backing_off');
    expect(await h.consumer.step(signal)).toBe('connecting');
    expect(await h.consumer.step(signal)).toBe('live');
    expect(await h.consumer.step(signal)).toBe('backing_off'); // read until the drop
    expect(h.data()).toEqual([rec('stepped')]);
    const stop = new AbortController();
    stop.abort();
    expect(await h.consumer.step(stop.signal)).toBe('stopped');
    expect(h.path()).toEqual(['connecting', 'backing_off', 'connecting', 'live', 'backing_off', 'stopped']);
  });
});

describe('StreamConsumer (gap filling)', () => {
  it('after downtime longer than gapAfter, replays from the disconnect date until created_at >= T, then goes live', async () => {
    const t = Date.now() - 2 * 3_600_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    platform.replay.push(
      sends(
        [
          frame('data', rec('old-1', iso(t - 3_600_000))),
          poke(),
          frame('data', rec('old-2', iso(t - 60_000))),
          frame('data', rec('caught-up', iso(t + 1_000))),
          frame('data', rec('after-catch-up', iso(t + 2_000))),
        ],
        0,
      ),
    );
    platform.connect.push(sends([frame('data', rec('live-1'))], 20));
    const h = harness({}, { lastDisconnectAt: iso(t), lastLiveAt: iso(t) });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('live-1')]));
    expect(h.path()).toEqual(['replaying', 'connecting', 'live']);
    const replayUrl = platform.requests.find((u) => u.pathname === '/replay')!;
    expect(replayUrl.searchParams.get('date')).toBe(utcDate(t));
    // Frames that came in the same chunk as the catch-up one are kept too (overlap is fine).
    const replayed = h.data('replay').map((p) => (p as { id: string }).id);
    expect(replayed.slice(0, 3)).toEqual(['old-1', 'old-2', 'caught-up']);
    expect(replayed.slice(3).every((id) => id === 'after-catch-up')).toBe(true);
    expect(h.gaps).toEqual([]);
    const counters = h.consumer.counters();
    expect(counters).toMatchObject({ replays: 1, replaysCaughtUp: 1 });
    // Live again: the gap is closed in the cursor.
    expect(h.consumer.cursor().lastDisconnectAt).toBeUndefined();
  });

  it('a long outage during a run (stream drop) is filled by replay before reconnecting', async () => {
    platform.connect.push(
      sendsThenDrops([frame('data', rec('before'))]),
      sends([frame('data', rec('after'))], 20),
    );
    // A poke first (a replay that starts slowly: one poke is not "nothing flows"), then the event that
    // hands off: created after T.
    const handoff = { id: 'handoff', type: 'measurement', created_at: '' };
    platform.replay.push((req, res, url) => {
      handoff.created_at = new Date().toISOString();
      sends([poke(), frame('data', handoff)], 0)(req, res, url);
    });
    let jumped = false;
    // The outage: the clock jumps 10 minutes while the stream is down.
    const h = harness({}, null, (to, self) => {
      if (to === 'backing_off' && !jumped) {
        jumped = true;
        self.advance(10 * 60_000);
      }
    });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('before'), rec('after')]));
    expect(h.path()).toEqual(['connecting', 'live', 'backing_off', 'replaying', 'connecting', 'live']);
    expect(h.transitions.find((t) => t.from === 'replaying')?.reason).toBe(
      `replay caught up (created_at ${handoff.created_at})`,
    );
    expect(h.data('replay')).toEqual([handoff]);
    const replayUrl = platform.requests.find((u) => u.pathname === '/replay')!;
    const gapStart = h.commits.find((c) => c.cursor.lastDisconnectAt)?.cursor.lastDisconnectAt;
    expect(replayUrl.searchParams.get('date')).toBe(gapStart?.slice(0, 10));
  });

  it('a replay in a quiet organization is given up after quietPokes pokes past T, its gap left to reconciliation', async () => {
    const t = Date.now() - 3_600_000;
    // Everything the replay has is older than T; then it only pokes ("nothing else flows").
    platform.replay.push(sends([frame('data', rec('old', new Date(t - 60_000).toISOString()))], 10));
    platform.connect.push(sends([frame('data', rec('live'))], 20));
    const h = harness({ quietPokes: 2 }, { lastDisconnectAt: new Date(t).toISOString() });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('live')]));
    expect(h.path()).toEqual(['replaying', 'connecting', 'live']);
    expect(h.gaps).toEqual([{ from: expect.any(String), to: expect.any(String), reason: 'replay-quiet' }]);
    // From T on the platform's clock (the pokes' offset, a millisecond or so here), an estimate taken early.
    expect(Math.abs(Date.parse(h.gaps[0]!.from) - (t - CLOCK_ESTIMATE_TOLERANCE_MS))).toBeLessThan(1000);
    expect(h.consumer.counters()).toMatchObject({ replays: 1, replaysCaughtUp: 0 });
  });

  it('retries a replay that answers 422, and reports a replay that is refused', async () => {
    const t = Date.now() - 3_600_000;
    platform.replay.push(answer(422), answer(400));
    platform.connect.push(sends([frame('data', rec('live'))], 20));
    const h = harness({}, { lastDisconnectAt: new Date(t).toISOString() });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('live')]));
    expect(h.path()).toEqual(['replaying', 'backing_off', 'replaying', 'connecting', 'live']);
    expect(h.gaps).toHaveLength(1);
    expect(h.gaps[0]).toMatchObject({
      from: new Date(t - CLOCK_ESTIMATE_TOLERANCE_MS).toISOString(),
      reason: 'replay-unavailable',
    });
    expect(h.consumer.counters().rebalancing).toBe(1);
  });

  it('gives up on a replay that keeps failing and goes live, reporting the gap', async () => {
    const t = Date.now() - 3_600_000;
    platform.defaultReplay = answer(503);
    platform.connect.push(sends([frame('data', rec('live'))], 20));
    const h = harness({ replayAttempts: 3 }, { lastDisconnectAt: new Date(t).toISOString() });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('live')]));
    expect(platform.count('/replay')).toBe(3);
    expect(h.path()).toEqual([
      'replaying',
      'backing_off',
      'replaying',
      'backing_off',
      'replaying',
      'connecting',
      'live',
    ]);
    expect(h.gaps).toEqual([
      {
        from: new Date(t - CLOCK_ESTIMATE_TOLERANCE_MS).toISOString(),
        to: expect.any(String),
        reason: 'replay-unavailable',
      },
    ]);
  });

  it('a gap longer than the stream checkpoint retention is reported and replayed up to the present', async () => {
    const t = Date.now() - 8 * 86_400_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    platform.replay.push(
      sends(
        [
          // >= T but older than now: with the stream checkpoint gone, replay must go on.
          frame('data', rec('day-after-T', iso(t + 86_400_000))),
          frame('data', rec('recent', iso(Date.now() + 60_000))),
        ],
        0,
      ),
    );
    platform.connect.push(sends([frame('data', rec('live'))], 20));
    const h = harness({}, { lastLiveAt: iso(t) });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('live')]));
    // A cursor that was live (no disconnect recorded) is a crash: what it had read is gone too.
    expect(h.gaps).toEqual([
      // Nothing committed: from when the stream was last heard, an estimate taken early.
      { from: iso(t - CLOCK_ESTIMATE_TOLERANCE_MS), to: expect.any(String), reason: 'crash' },
      { from: iso(t), to: expect.any(String), reason: 'stream-checkpoint-expired' },
    ]);
    expect(h.data('replay').map((p) => (p as { id: string }).id)).toEqual(['day-after-T', 'recent']);
    expect(platform.requests.find((u) => u.pathname === '/replay')?.searchParams.get('date')).toBe(
      utcDate(t),
    );
  });

  it('a gap older than replay serves is reported for REST backfill; replay starts at the earliest date', async () => {
    const now = Date.now();
    const t = now - 40 * 86_400_000;
    // Past the stream checkpoint too: the replay hands off at an event created now.
    platform.replay.push((req, res, url) =>
      sends([poke(), frame('data', rec('now', new Date().toISOString()))], 10)(req, res, url),
    );
    platform.connect.push(sends([frame('data', rec('live'))], 20));
    const h = harness({}, { lastDisconnectAt: new Date(t).toISOString() });
    h.start();
    await vi.waitFor(() => expect(h.data('stream')).toEqual([rec('live')]));
    const earliest = utcDate(now - 29 * 86_400_000);
    expect(h.gaps).toEqual([
      { from: new Date(t).toISOString(), to: `${earliest}T00:00:00.000Z`, reason: 'beyond-replay' },
    ]);
    expect(platform.requests.find((u) => u.pathname === '/replay')?.searchParams.get('date')).toBe(earliest);
  });
});
