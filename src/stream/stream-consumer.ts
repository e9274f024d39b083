/**
 * The stream consumer: keeps one main-stream connection live, detects stale connections, backs off on
 * 422 rebalancing and errors, fills gaps with replay, and commits frames in micro-batches together with
 * its cursor (STATE-MACHINE.md next to this file).
 *
 * Its decisions are a pure transition function (next-consumer-state.ts). `StreamConsumer` is the
 * driver: it performs the effects the function asks for (open the stream or a replay, read it, commit,
 * sleep, report a gap, announce a state change) and feeds what happened back as events, with the time.
 * Everything outside is injected (`StreamConsumerDeps`). `run(signal)` drives the machine until the
 * signal aborts (then it flushes what was fully received and resolves) or a permanent error (401/403,
 * `PermanentError`, a commit that keeps failing) ends it (then it rejects with that error). Beside it:
 * the sleep that wakes on a signal and the timer race its reads use. Its commits go through the
 * pipelined writer (stream-writer.ts), which writes one micro-batch while the next is read.
 */
import type { StreamConsumerOptions } from '../config/stream-options.ts';
import { classifyFailure } from '../errors/index.ts';
import { silentLogger } from '../log/logger.ts';
import { redactedMessage } from '../redact/redact-secrets.ts';
import { type Clock, MAX_TIMER_MS, systemClock } from '../time/clock.ts';
import type { StreamCursorValue } from '../warehouse/cursors.ts';
import { classifyOpenFailure } from './consumer-connection.ts';
import { parseTime } from './consumer-cursor.ts';
import {
  type ConsumerEvent,
  copyStreamCounters,
  type Effect,
  initialMachineState,
  type MachineState,
  type PassOutcome,
  WAITING_EFFECTS,
} from './consumer-machine.ts';
import { resolveStreamConsumerOptions, type StreamConsumerOptionsInput } from './consumer-options.ts';
import { quietForMs, readTimers } from './consumer-waits.ts';
import { next } from './next-consumer-state.ts';
import { readSseFrameBatches } from './sse-reader.ts';
import { EarlierWriteFailed } from './stream-writer.ts';
import type {
  SseFrame,
  SseLog,
  SseSource,
  StreamConsumerDeps,
  StreamCounters,
  StreamState,
} from './types.ts';

interface Connection {
  controller: AbortController;
  signal: AbortSignal;
  source: SseSource;
}

type Settled = { ok: true; result: IteratorResult<SseFrame[]> } | { ok: false; error: unknown };

export class StreamConsumer {
  readonly options: StreamConsumerOptions;
  readonly #deps: StreamConsumerDeps;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: SseLog;

  #machine: MachineState;
  /** The state last announced (`onStateChange`): what `state` shows while effects are performed. */
  #announced: StreamState = 'stopped';
  #announcements = 0;
  /** Effects not performed yet; a waiting effect (open, read, sleep, continue) is always the last. */
  #pending: Effect[] = [];
  #running = false;
  #connection: Connection | undefined;
  /** The machine asked to close the connection being read. */
  #closing = false;
  #reading = false;
  /** This connection holds the organization's replay (`claimReplay`) until it connects or stops. */
  #replayClaimed = false;

  constructor(deps: StreamConsumerDeps, options: StreamConsumerOptionsInput = {}) {
    this.#deps = deps;
    this.options = resolveStreamConsumerOptions(options);
    this.#clock = deps.clock ?? systemClock;
    this.#random = deps.random ?? Math.random;
    this.#log = deps.log ?? silentLogger;
    this.#machine = initialMachineState(this.options);
  }

  get state(): StreamState {
    return this.#announced;
  }

  /** A snapshot of the counters (frames by kind, connects, 422s, stale detections, replays, commits…). */
  counters(): StreamCounters {
    return copyStreamCounters(this.#machine.counters);
  }

  /**
   * How long this consumer has been idle in the sense of `--exit-when-idle` (ms, 0 when not idle):
   * live, pokes arriving, no data, nothing buffered. See consumer-waits.ts and STATE-MACHINE.md, "Idle".
   */
  quietForMs(): number {
    const m = this.#machine;
    return quietForMs({
      state: this.#announced,
      pendingFrames: m.buffer.length + (m.committing?.frames.length ?? 0) + (m.unsaved?.frames.length ?? 0),
      quietFromMs: m.quietFromMs,
      lastPokeAtMs: m.lastPokeAtMs,
    });
  }

  /** The cursor as last committed (or loaded). */
  cursor(): StreamCursorValue {
    return { ...this.#machine.cursor };
  }

  /** `role: 'pass'`: how the pass ended (undefined while it runs or for the primary stream). */
  passOutcome(): PassOutcome | undefined {
    return this.#machine.passOutcome;
  }

  /** `role: 'pass'`, caught up: everything created before this (platform ms) was delivered. */
  passReachedMs(): number | undefined {
    return this.#machine.passReachedMs;
  }

  /** `role: 'pass'`: it ended right after a poke with nothing uncommitted (nothing was in flight). */
  passEndedQuiet(): boolean {
    return this.#machine.passEndedQuiet;
  }

  /** Platform clock minus ours (ms), from the last poke; undefined before any poke. */
  platformOffsetMs(): number | undefined {
    return this.#machine.platformOffsetMs;
  }

  /**
   * Runs until `signal` aborts (flushes, commits the cursor, resolves) or a permanent error
   * (rejects with it, state `stopped`). Not re-entrant; may be called again once stopped.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error('StreamConsumer.run is already running');
    this.#running = true;
    try {
      await this.step(signal);
      while (this.#announced !== 'stopped') await this.step(signal);
    } finally {
      this.#running = false;
    }
  }

  /**
   * One transition (pg-boss `supervise()` style, for tests and custom drivers): from `stopped` it loads
   * the cursor and enters `connecting` or `replaying`; otherwise it performs what the current state
   * waits for (`live` and `replaying` read until their connection ends) until a state change is
   * announced. Returns the new state. With `signal` aborted it flushes and enters `stopped`. Rejects
   * (state `stopped`) on a permanent error.
   */
  async step(signal: AbortSignal): Promise<StreamState> {
    try {
      if (this.#announced === 'stopped' && this.#pending.length === 0) {
        const cursor = await this.#deps.loadCursor();
        if (!signal.aborted) await this.#dispatch({ kind: 'start', now: this.#clock.now(), cursor });
        return this.#announced;
      }
      const before = this.#announcements;
      while (this.#announcements === before && this.#pending.length > 0) await this.#wait(signal);
      if (this.#pending.length === 0 && this.#announced !== 'stopped') {
        // Every state but `stopped` waits for something; a machine that asks for nothing is a bug.
        throw new Error(`StreamConsumer: nothing to wait for in state ${this.#announced}`);
      }
    } catch (error) {
      this.#closeConnection();
      this.#pending = [];
      this.#machine = { ...this.#machine, phase: 'stopped', connection: undefined, replay: undefined };
      if (this.#announced !== 'stopped') this.#announce('stopped', `failed: ${redactedMessage(error)}`);
      throw error;
    }
    return this.#announced;
  }

  /** Feeds an event to the machine and performs its effects up to the first one that waits. */
  async #dispatch(event: ConsumerEvent): Promise<void> {
    const { state, effects } = next(this.#machine, event);
    this.#machine = state;
    this.#pending.push(...effects);
    while (this.#pending.length > 0 && !WAITING_EFFECTS.has(this.#pending[0]!.kind)) {
      await this.#perform(this.#pending.shift()!);
    }
  }

  async #perform(effect: Effect): Promise<void> {
    switch (effect.kind) {
      case 'notify':
        return this.#announce(effect.to, effect.reason);
      case 'log':
        return this.#log[effect.level](effect.fields, effect.message);
      case 'commit':
        return this.#commit(effect);
      case 'report-gap':
        try {
          await this.#deps.onGap?.(effect.gap);
        } catch (error) {
          this.#log.error({ err: error, gap: effect.gap }, 'reporting a stream gap failed');
        }
        return;
      case 'close':
        this.#closing = true;
        if (!this.#reading) {
          this.#closeConnection();
          return this.#dispatch({ kind: 'closed', now: this.#clock.now(), jitter: this.#random() });
        }
        return;
      case 'fail':
        throw effect.error;
      default:
        throw new Error(`StreamConsumer: ${effect.kind} is not performed here`);
    }
  }

  /** Performs the waiting effect at the head of the queue (or stops, if `signal` aborted). */
  async #wait(signal: AbortSignal): Promise<void> {
    const effect = this.#pending.shift()!;
    if (signal.aborted) return this.#dispatch({ kind: 'stop', now: this.#clock.now() });
    switch (effect.kind) {
      case 'open-stream':
        return this.#open(signal, (s) => this.#deps.openStream(s));
      case 'open-replay':
        return this.#open(signal, (s) => this.#deps.openReplay(effect.date, s));
      case 'read':
        return this.#read(signal);
      case 'sleep':
        await sleepQuietly(this.#clock, effect.ms, signal);
        if (signal.aborted) return this.#dispatch({ kind: 'stop', now: this.#clock.now() });
        return this.#dispatch({ kind: 'slept', now: this.#clock.now() });
      case 'continue':
        return this.#dispatch({ kind: 'continue', now: this.#clock.now(), jitter: this.#random() });
      case 'claim-replay': {
        const own = this.#machine.cursor.newestCreatedAt;
        const claim = this.#deps.claimReplay?.() ?? { granted: true, floorCreatedAt: own };
        this.#replayClaimed = claim.granted;
        return this.#dispatch({
          kind: 'replay-claimed',
          now: this.#clock.now(),
          granted: claim.granted,
          floorMs: parseTime(claim.floorCreatedAt),
        });
      }
      default:
        return this.#perform(effect);
    }
  }

  async #open(signal: AbortSignal, open: (signal: AbortSignal) => Promise<SseSource>): Promise<void> {
    const controller = new AbortController();
    const linked = AbortSignal.any([signal, controller.signal]);
    let source: SseSource;
    try {
      source = await open(linked);
    } catch (error) {
      controller.abort();
      if (signal.aborted) return this.#dispatch({ kind: 'stop', now: this.#clock.now() });
      const retryAfterMs = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
      return this.#dispatch({
        kind: 'open-failed',
        now: this.#clock.now(),
        failure: classifyOpenFailure(error),
        error,
        message: redactedMessage(error),
        retryAfterMs: typeof retryAfterMs === 'number' ? retryAfterMs : undefined,
        jitter: this.#random(),
      });
    }
    this.#connection = { controller, signal: linked, source };
    this.#closing = false;
    await this.#dispatch({ kind: 'opened', now: this.#clock.now(), serverTimeMs: source.serverTimeMs });
  }

  /** Reads frames until the machine closes the connection; it commits by count and time along the way. */
  async #read(signal: AbortSignal): Promise<void> {
    const connection = this.#connection;
    if (!connection) throw new Error('StreamConsumer: read without a connection');
    const batches = readSseFrameBatches(connection.source.body, {
      maxFrameBytes: this.options.maxFrameBytes,
      // Only our own close ends the reader: a stop must still read what was received (below). A read
      // on a silent body is raced with the run's signal by the loop itself.
      signal: connection.controller.signal,
      now: () => this.#clock.now(),
    });
    const settle = (read: Promise<IteratorResult<SseFrame[]>>): Promise<Settled> =>
      read.then(
        (result): Settled => ({ ok: true, result }),
        (error: unknown): Settled => ({ ok: false, error }),
      );
    const now = () => this.#clock.now();
    let pending: Promise<Settled> | undefined;
    // Frames of the last body chunk, handled one by one before reading on.
    let queued: SseFrame[] = [];
    let index = 0;
    this.#reading = true;
    try {
      while (!this.#closing) {
        if (signal.aborted) {
          await this.#dispatch({ kind: 'stop', now: now() });
          if (!this.#closing) break;
          continue;
        }
        const frame = queued[index];
        if (frame !== undefined) {
          index += 1;
          await this.#dispatch({ kind: 'frame', now: now(), frame });
          continue;
        }
        if (!pending) {
          pending = settle(batches.next());
          await this.#dispatch({ kind: 'read-started', now: now() });
        }
        const { wakeAt, staleAt } = readTimers(this.#machine);
        if (wakeAt <= now()) {
          // Already due (a replay past its deadline): no timer to wait for.
          await this.#dispatch({ kind: 'tick', now: now() });
          continue;
        }
        let settled = await raceWithTimer(this.#clock, pending, wakeAt - now(), signal);
        if (settled === TIMER && !signal.aborted && now() >= staleAt) {
          // Timers run before I/O in an event-loop turn: after a long pause (GC, a slow commit) bytes
          // may be waiting in the socket. Let I/O run once before calling the connection stale.
          settled = await Promise.race<Settled | typeof TIMER>([pending, nextTurn().then(() => TIMER)]);
        }
        if (settled === TIMER) {
          if (!signal.aborted) await this.#dispatch({ kind: 'tick', now: now() });
          continue;
        }
        pending = undefined;
        if (!settled.ok) {
          if (signal.aborted) continue;
          await this.#dispatch({
            kind: 'disconnected',
            now: now(),
            error: settled.error,
            message: redactedMessage(settled.error),
          });
        } else if (settled.result.done) {
          await this.#dispatch({ kind: 'disconnected', now: now() });
        } else {
          queued = settled.result.value;
          index = 0;
        }
      }
      // Frames of the last chunk after the one that ended this connection (idle, caught up, stop) were
      // fully received and the server counts them as delivered: the machine keeps them.
      for (const rest of queued.slice(index))
        await this.#dispatch({ kind: 'frame', now: now(), frame: rest });
      // So are the frames in the bytes received and not parsed yet (up to 16 MiB read ahead): take no
      // more bytes, read the rest of what came to its end, keep those frames too.
      if (connection.source.stopReceiving) {
        connection.source.stopReceiving();
        for (;;) {
          const settled = await (pending ?? settle(batches.next()));
          pending = undefined;
          if (!settled.ok || settled.result.done) break;
          for (const frame of settled.result.value)
            await this.#dispatch({ kind: 'frame', now: now(), frame });
        }
      }
    } finally {
      this.#reading = false;
      connection.controller.abort();
      // Not awaited: the generator finishes once the aborted read settles.
      void batches.return(undefined).catch(() => {});
    }
    this.#connection = undefined;
    await this.#dispatch({ kind: 'closed', now: now(), jitter: this.#random() });
  }

  /**
   * Writes frames + cursor once and tells the machine how it went: a failure is not retried here but
   * held by the machine, which stops reading and retries with back-off (state `holding`).
   */
  async #commit(effect: Extract<Effect, { kind: 'commit' }>): Promise<void> {
    const { frames, cursor, via, reason } = effect;
    try {
      await this.#deps.commit(frames, cursor, { via, reason });
    } catch (error) {
      const failed = error instanceof EarlierWriteFailed ? error : undefined;
      const cause = failed ? failed.cause : error;
      return this.#dispatch({
        kind: 'commit-failed',
        now: this.#clock.now(),
        permanent: classifyFailure(cause).kind === 'permanent',
        earlier: failed?.frames,
        error: cause,
        message: redactedMessage(cause),
        jitter: this.#random(),
      });
    }
    return this.#dispatch({ kind: 'committed', now: this.#clock.now() });
  }

  #closeConnection(): void {
    this.#connection?.controller.abort();
    this.#connection = undefined;
  }

  #announce(to: StreamState, reason: string): void {
    if (this.#replayClaimed && (to === 'connecting' || to === 'live' || to === 'stopped')) {
      this.#replayClaimed = false;
      this.#deps.releaseReplay?.();
    }
    const from = this.#announced;
    this.#announced = to;
    this.#announcements += 1;
    this.#log.info({ from, to, reason }, 'SSE consumer state');
    this.#deps.onStateChange?.(from, to, reason);
  }
}

/** The driver's waits on the injected clock: a sleep that never throws, and a read raced with a timer. */
export const TIMER: unique symbol = Symbol('timer');

export async function sleepQuietly(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    // Clamped for any Clock, not only the system one: a wake-up time with no timer due is Infinity.
    await clock.sleep(Math.min(Math.max(0, ms), MAX_TIMER_MS), signal);
  } catch {
    // An aborted sleep ends early; callers look at their signal.
  }
}

/** Resolves after pending I/O callbacks of this event-loop turn have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Waits for `pending`, at most `ms`, or until `signal` aborts; TIMER when it did not settle in time. */
export async function raceWithTimer<T>(
  clock: Clock,
  pending: Promise<T>,
  ms: number,
  signal: AbortSignal,
): Promise<T | typeof TIMER> {
  const timer = new AbortController();
  const onAbort = () => timer.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await Promise.race<T | typeof TIMER>([
      pending,
      sleepQuietly(clock, ms, timer.signal).then(() => TIMER),
    ]);
  } finally {
    signal.removeEventListener('abort', onAbort);
    timer.abort();
  }
}
