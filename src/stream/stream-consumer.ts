/**
 * The stream consumer: an explicit state machine (see STATE-MACHINE.md next to this file) that keeps
 * one main-stream connection live, detects stale connections, backs off on 422 rebalancing and
 * errors, fills gaps with replay, and commits frames in micro-batches together with its checkpoint.
 *
 * Everything outside the state machine is injected (`StreamConsumerDeps`): opening the stream and the
 * replay, committing a batch + checkpoint in one transaction, loading the checkpoint, the clock, the
 * jitter source and the logger. `run(signal)` drives the machine until the signal aborts (then it
 * flushes what was fully received and resolves) or a permanent error (401/403, `PermanentError`, a
 * commit that keeps failing) ends it (then it rejects with that error).
 */

import { silentLogger } from '../log/logger.ts';
import { redactKnownSecrets } from '../redact/redact-secrets.ts';
import { systemClock } from '../time/clock.ts';
import { backoffDelay, idleDelay, reconnectDelay } from './backoff-delay.ts';
import { classifyFrame } from './classify-frame.ts';
import { DEFAULT_STREAM_CONSUMER_OPTIONS } from './default-options.ts';
import { planGapFill } from './plan-gap-fill.ts';
import { quietForMs } from './quiet-for.ts';
import { readSseFrameBatches } from './read-sse-frames.ts';
import type {
  BackoffOptions,
  Clock,
  CommitReason,
  DataFrame,
  IdleHygieneOptions,
  MicroBatchOptions,
  SseFrame,
  SseLog,
  SseSource,
  StreamCheckpoint,
  StreamConsumerDeps,
  StreamConsumerOptions,
  StreamCounters,
  StreamState,
  StreamVia,
} from './types.ts';

export { DEFAULT_STREAM_CONSUMER_OPTIONS };

/** Options as callers pass them: every field optional, nested groups merged with the defaults. */
export type StreamConsumerOptionsInput = Partial<
  Omit<StreamConsumerOptions, 'backoff' | 'idleHygiene' | 'microBatch'>
> & {
  backoff?: Partial<BackoffOptions>;
  idleHygiene?: Partial<IdleHygieneOptions>;
  microBatch?: Partial<MicroBatchOptions>;
};

export function resolveStreamConsumerOptions(input: StreamConsumerOptionsInput = {}): StreamConsumerOptions {
  const d = DEFAULT_STREAM_CONSUMER_OPTIONS;
  return {
    ...d,
    ...input,
    backoff: { ...d.backoff, ...input.backoff },
    idleHygiene: { ...d.idleHygiene, ...input.idleHygiene },
    microBatch: { ...d.microBatch, ...input.microBatch },
  };
}

/** How an open failure is handled: 422 and transient errors back off; auth and `PermanentError` stop. */
export type OpenFailureKind = 'rebalancing' | 'retry' | 'permanent' | 'refused';

/**
 * 422 is rebalancing (retry). 401/403 are permanent (the token is wrong: stop). Any other error marked
 * non-retryable (a `PermanentError`, or an HTTP error with `retryable: false`) is `refused`: permanent
 * for the stream, and for replay "this gap cannot be replayed". Everything else is retried.
 */
export function classifyOpenFailure(error: unknown): OpenFailureKind {
  const e = (error ?? {}) as { status?: unknown; retryable?: unknown; name?: unknown };
  if (e.status === 422) return 'rebalancing';
  if (e.status === 401 || e.status === 403) return 'permanent';
  if (e.retryable === false) return 'refused';
  if (error instanceof Error && /PermanentError|PermanentHttpError/.test(String(e.name))) return 'refused';
  return 'retry';
}

interface Connection {
  controller: AbortController;
  signal: AbortSignal;
  source: SseSource;
}

type ConsumeOutcome =
  | { kind: 'stopped' }
  | { kind: 'stale' }
  | { kind: 'ended' }
  | { kind: 'error'; error: unknown }
  | { kind: 'idle' }
  | { kind: 'timed-out' }
  | { kind: 'caught-up'; why: string };

type Settled = { ok: true; result: IteratorResult<SseFrame[]> } | { ok: false; error: unknown };

const TIMER: unique symbol = Symbol('timer');

export class StreamConsumer {
  readonly options: StreamConsumerOptions;
  readonly #deps: StreamConsumerDeps;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: SseLog;

  #state: StreamState = 'stopped';
  #running = false;
  #counters: StreamCounters = emptyStreamCounters();
  #checkpoint: StreamCheckpoint = {};

  #buffer: DataFrame[] = [];
  #bufferVia: StreamVia = 'stream';
  #bufferSince = 0;
  #lastCommitAt = 0;

  /** Start T of the open gap (ms), mirrored in `checkpoint.lastDisconnectAt`; undefined while live. */
  #gapStartMs: number | undefined;
  #gapReported = false;
  /** Last frame on the main stream (ms): "connected until here". */
  #lastStreamFrameAt: number | undefined;

  /** Since when the main stream has been live and without data (ms); see quiet-for.ts. */
  #quietFromMs: number | undefined;
  #lastPokeAtMs: number | undefined;
  /** Platform clock minus this clock, from the last poke's `ts`; undefined until a poke arrived. */
  #platformOffsetMs: number | undefined;
  /** When the replay of the open gap first started (ms), for `replayTimeoutMs`; reset at hand-off. */
  #replayStartedAt: number | undefined;

  #attempt = 0;
  #idleRound = 0;
  #replayFailures = 0;
  #delayMs = 0;
  #afterBackoff: 'connecting' | 'replaying' = 'connecting';
  #staleVia: StreamVia = 'stream';
  #connection: Connection | undefined;

  constructor(deps: StreamConsumerDeps, options: StreamConsumerOptionsInput = {}) {
    this.#deps = deps;
    this.options = resolveStreamConsumerOptions(options);
    this.#clock = deps.clock ?? systemClock;
    this.#random = deps.random ?? Math.random;
    this.#log = deps.log ?? silentLogger;
  }

  get state(): StreamState {
    return this.#state;
  }

  /** A snapshot of the counters (frames by kind, connects, 422s, stale detections, replays, commits…). */
  counters(): StreamCounters {
    return structuredClone(this.#counters);
  }

  /**
   * How long this consumer has been idle in the sense of `--exit-when-idle` (ms, 0 when not idle):
   * live, pokes arriving, no data, nothing buffered. See quiet-for.ts and STATE-MACHINE.md, "Idle".
   */
  quietForMs(): number {
    return quietForMs({
      state: this.#state,
      pendingFrames: this.#buffer.length,
      quietFromMs: this.#quietFromMs,
      lastPokeAtMs: this.#lastPokeAtMs,
    });
  }

  /** The checkpoint as last committed (or loaded). */
  checkpoint(): StreamCheckpoint {
    return { ...this.#checkpoint };
  }

  /**
   * Runs until `signal` aborts (flushes, commits the checkpoint, resolves) or a permanent error
   * (rejects with it, state `stopped`). Not re-entrant; may be called again once stopped.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error('StreamConsumer.run is already running');
    this.#running = true;
    try {
      await this.step(signal);
      while (this.#state !== 'stopped') await this.step(signal);
    } finally {
      this.#running = false;
    }
  }

  /**
   * One transition (pg-boss `supervise()` style, for tests and custom drivers): from `stopped` it loads
   * the checkpoint and enters `connecting` or `replaying`; otherwise it runs the current state until
   * that state ends (`live` and `replaying` read until their connection ends). Returns the new state.
   * With `signal` aborted it flushes and enters `stopped`. Rejects (state `stopped`) on a permanent error.
   */
  async step(signal: AbortSignal): Promise<StreamState> {
    try {
      if (this.#state === 'stopped') {
        await this.#start(signal);
      } else if (signal.aborted) {
        await this.#stop('stop requested');
      } else {
        await this.#runState(signal);
      }
    } catch (error) {
      this.#closeConnection();
      if (this.#state !== 'stopped') this.#transition('stopped', `failed: ${describe(error)}`);
      throw error;
    }
    return this.#state;
  }

  async #start(signal: AbortSignal): Promise<void> {
    const loaded = (await this.#deps.loadCheckpoint()) ?? {};
    this.#checkpoint = pickCheckpoint(loaded);
    this.#lastStreamFrameAt = parseTime(loaded.lastLiveAt);
    // Not live yet: the gap runs from the last disconnect, or from the last sign of life if the
    // previous process died without recording one.
    this.#gapStartMs = parseTime(loaded.lastDisconnectAt) ?? this.#lastStreamFrameAt;
    this.#gapReported = false;
    this.#lastCommitAt = this.#clock.now();
    this.#attempt = 0;
    this.#idleRound = 0;
    this.#replayFailures = 0;
    this.#replayStartedAt = undefined;
    this.#quietFromMs = undefined;
    this.#lastPokeAtMs = undefined;
    // The offset the stored times were written with: it puts the gap start on the platform's clock.
    this.#platformOffsetMs = this.#checkpoint.platformOffsetMs;
    if (signal.aborted) return;
    if (this.#gapNeedsReplay()) {
      this.#transition('replaying', `start-up ${this.#gapDescription()}`);
    } else {
      this.#transition('connecting', 'start-up');
    }
  }

  async #runState(signal: AbortSignal): Promise<void> {
    switch (this.#state) {
      case 'connecting':
        return this.#stepConnecting(signal);
      case 'live':
        return this.#stepLive(signal);
      case 'replaying':
        return this.#stepReplaying(signal);
      case 'stale':
        return this.#stepStale();
      case 'backing_off':
        return this.#stepBackingOff(signal);
      case 'stopped':
        return;
    }
  }

  async #stepConnecting(signal: AbortSignal): Promise<void> {
    let connection: Connection;
    try {
      connection = await this.#open(signal, (s) => this.#deps.openStream(s));
    } catch (error) {
      if (signal.aborted) return this.#stop('stop requested');
      return this.#onOpenFailure(error, 'stream');
    }
    this.#connection = connection;
    this.#counters.connects += 1;
    if (this.#counters.connects > 1) this.#counters.reconnects += 1;
    // Connected: the stream resumes from its own server-side checkpoint, so the gap is closed.
    this.#lastStreamFrameAt = this.#clock.now();
    this.#quietFromMs = this.#lastStreamFrameAt;
    const hadGap = this.#gapStartMs !== undefined;
    this.#gapStartMs = undefined;
    this.#gapReported = false;
    if (hadGap) await this.#flush('stream', 'state-change', true);
    this.#transition('live', 'connected');
  }

  async #stepLive(signal: AbortSignal): Promise<void> {
    const connection = this.#connection;
    if (!connection) return this.#transition('connecting', 'no connection');
    const outcome = await this.#consume('stream', connection, signal, undefined);
    this.#closeConnection();
    switch (outcome.kind) {
      case 'stopped':
        return this.#stop('stop requested');
      case 'stale':
        this.#openGap();
        await this.#flush('stream', 'state-change', true);
        this.#staleVia = 'stream';
        return this.#transition('stale', `no frame for ${this.options.staleAfterMs} ms`);
      case 'idle': {
        // Voluntary drop (connection hygiene): the stream keeps its checkpoint, so no gap opens.
        this.#counters.idleDrops += 1;
        await this.#flush('stream', 'state-change', true);
        const delay = Math.max(
          this.options.backoff.minMs,
          idleDelay(this.#idleRound, this.options.idleHygiene.delaysMs),
        );
        this.#idleRound += 1;
        return this.#backOff(
          delay,
          'connecting',
          `idle: ${this.options.idleHygiene.maxPokesWithoutData} pokes without data`,
        );
      }
      case 'ended':
      case 'error':
      case 'timed-out':
      case 'caught-up': {
        // (`timed-out` and `caught-up` are replay outcomes; listed so every outcome leaves `live`.)
        this.#counters.errors += 1;
        this.#openGap();
        await this.#flush('stream', 'state-change', true);
        const why =
          outcome.kind === 'error' ? `disconnected: ${describe(outcome.error)}` : 'server ended the stream';
        this.#log.warn({ err: outcome.kind === 'error' ? outcome.error : undefined }, `SSE stream ${why}`);
        return this.#backOff(this.#nextBackoff(), 'connecting', why);
      }
    }
  }

  async #stepReplaying(signal: AbortSignal): Promise<void> {
    const now = this.#clock.now();
    this.#replayStartedAt ??= now;
    const deadline = this.#replayStartedAt + this.options.replayTimeoutMs;
    if (now >= deadline) {
      return this.#giveUpReplay(
        `replay timed out after ${this.options.replayTimeoutMs} ms`,
        undefined,
        'replay-timed-out',
      );
    }
    const plan = this.#planReplay(now);
    if (plan.tooLong && !this.#gapReported) {
      this.#gapReported = true;
      await this.#reportGap(plan.tooLong);
    }
    this.#counters.replays += 1;
    let connection: Connection;
    try {
      connection = await this.#open(signal, (s) => this.#deps.openReplay(plan.replayDate, s));
    } catch (error) {
      if (signal.aborted) return this.#stop('stop requested');
      return this.#onOpenFailure(error, 'replay');
    }
    this.#connection = connection;
    this.#log.info(
      { replayDate: plan.replayDate, catchUpAt: new Date(plan.catchUpAtMs).toISOString() },
      'SSE replay connected',
    );
    const outcome = await this.#consume('replay', connection, signal, plan.catchUpAtMs, deadline);
    this.#closeConnection();
    switch (outcome.kind) {
      case 'stopped':
        return this.#stop('stop requested');
      case 'caught-up': {
        // Everything up to now is in; should the main stream stay unreachable for long, the next gap
        // starts here.
        this.#counters.replaysCaughtUp += 1;
        this.#replayFailures = 0;
        this.#replayStartedAt = undefined;
        this.#gapStartMs = this.#clock.now();
        await this.#flush('replay', 'state-change', true);
        return this.#transition('connecting', `replay caught up (${outcome.why})`);
      }
      case 'timed-out':
        await this.#flush('replay', 'state-change', true);
        return this.#giveUpReplay(
          `replay timed out after ${this.options.replayTimeoutMs} ms without an event created at or after ${new Date(plan.catchUpAtMs).toISOString()}`,
          undefined,
          'replay-timed-out',
        );
      case 'stale':
        await this.#flush('replay', 'state-change', true);
        if (this.#replayFailed()) {
          return this.#giveUpReplay(`replay failed ${this.options.replayAttempts} times: stale`, undefined);
        }
        this.#staleVia = 'replay';
        return this.#transition('stale', `no replay frame for ${this.options.staleAfterMs} ms`);
      case 'idle':
      case 'ended':
      case 'error': {
        // A replay the server ends before the hand-off has not caught up: retry it like a drop.
        this.#counters.errors += 1;
        await this.#flush('replay', 'state-change', true);
        const why =
          outcome.kind === 'error'
            ? `replay disconnected: ${describe(outcome.error)}`
            : outcome.kind === 'ended'
              ? 'replay ended before the hand-off'
              : 'replay idle';
        if (this.#replayFailed()) {
          return this.#giveUpReplay(`replay failed ${this.options.replayAttempts} times: ${why}`, undefined);
        }
        return this.#backOff(this.#nextBackoff(), 'replaying', why);
      }
    }
  }

  #stepStale(): void {
    this.#counters.staleDetections += 1;
    this.#backOff(
      this.#nextBackoff(),
      this.#staleVia === 'replay' ? 'replaying' : 'connecting',
      'stale connection dropped',
    );
  }

  async #stepBackingOff(signal: AbortSignal): Promise<void> {
    await sleepQuietly(this.#clock, this.#delayMs, signal);
    if (signal.aborted) return this.#stop('stop requested');
    if (this.#afterBackoff === 'replaying' || this.#gapNeedsReplay()) {
      return this.#transition('replaying', `back-off elapsed; ${this.#gapDescription()}`);
    }
    this.#transition('connecting', 'back-off elapsed');
  }

  async #onOpenFailure(error: unknown, via: StreamVia): Promise<void> {
    const kind = classifyOpenFailure(error);
    const what = via === 'stream' ? 'stream connect' : 'replay';
    if (kind === 'permanent' || (kind === 'refused' && via === 'stream')) {
      this.#log.error({ err: error }, `SSE ${what} refused permanently`);
      throw error;
    }
    if (kind === 'refused') return this.#giveUpReplay(`replay refused: ${describe(error)}`, error);
    if (kind === 'rebalancing') this.#counters.rebalancing += 1;
    else this.#counters.errors += 1;
    if (via === 'replay' && this.#replayFailed()) {
      return this.#giveUpReplay(
        `replay failed ${this.options.replayAttempts} times: ${describe(error)}`,
        error,
      );
    }
    let delay = this.#nextBackoff();
    const retryAfterMs = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
    if (typeof retryAfterMs === 'number' && retryAfterMs > delay) delay = retryAfterMs;
    const why =
      kind === 'rebalancing' ? `${what} answered 422 (rebalancing)` : `${what} failed: ${describe(error)}`;
    this.#log.warn({ err: error, delayMs: delay }, `SSE ${why}`);
    this.#backOff(delay, via === 'replay' ? 'replaying' : 'connecting', why);
  }

  /** Counts a failed replay attempt; true once `replayAttempts` failed in a row. */
  #replayFailed(): boolean {
    this.#replayFailures += 1;
    return this.#replayFailures >= this.options.replayAttempts;
  }

  /**
   * The replay cannot serve this gap (a 400 for a date it no longer keeps, or it keeps failing): hand
   * the gap to a REST backfill and go back to the main stream rather than staying off it forever.
   */
  async #giveUpReplay(
    why: string,
    error: unknown,
    reason: 'replay-unavailable' | 'replay-timed-out' = 'replay-unavailable',
  ): Promise<void> {
    this.#log.warn({ err: error }, `SSE ${why}; the gap needs a REST backfill`);
    this.#replayFailures = 0;
    this.#replayStartedAt = undefined;
    const now = this.#clock.now();
    await this.#reportGap({
      from: new Date(this.#gapStartMs ?? now).toISOString(),
      to: new Date(now).toISOString(),
      reason,
    });
    this.#gapStartMs = now;
    this.#transition('connecting', why);
  }

  /** Reads frames until something ends this connection; commits by count and time along the way. */
  async #consume(
    via: StreamVia,
    connection: Connection,
    signal: AbortSignal,
    catchUpAtMs: number | undefined,
    deadline = Infinity,
  ): Promise<ConsumeOutcome> {
    const { staleAfterMs, microBatch, heartbeatCommitMs, idleHygiene, maxFrameBytes } = this.options;
    const batches = readSseFrameBatches(connection.source.body, {
      maxFrameBytes,
      signal: connection.signal,
      now: () => this.#clock.now(),
    });
    let pending: Promise<Settled> | undefined;
    let waitStartedAt = this.#clock.now();
    let pokesWithoutData = 0;
    let delivered = false;
    // Frames of the last body chunk, handled one by one before reading on.
    let queued: SseFrame[] = [];
    let next = 0;
    try {
      while (true) {
        if (signal.aborted) return { kind: 'stopped' };
        // Checked per frame too: a replay that keeps sending data never reaches the timer below.
        if (this.#clock.now() >= deadline) return { kind: 'timed-out' };
        const frame = queued[next];
        if (frame === undefined) {
          if (!pending) {
            pending = batches.next().then(
              (result): Settled => ({ ok: true, result }),
              (error: unknown): Settled => ({ ok: false, error }),
            );
            waitStartedAt = this.#clock.now();
          }
          const staleAt = waitStartedAt + staleAfterMs;
          const batchAt = this.#buffer.length > 0 ? this.#bufferSince + microBatch.maxWaitMs : Infinity;
          const heartbeatAt = via === 'stream' ? this.#lastCommitAt + heartbeatCommitMs : Infinity;
          const wakeAt = Math.min(staleAt, batchAt, heartbeatAt, deadline);
          let settled = await raceWithTimer(this.#clock, pending, wakeAt - this.#clock.now(), signal);
          if (settled === TIMER && !signal.aborted && this.#clock.now() >= staleAt) {
            // Timers run before I/O in an event-loop turn: after a long pause (GC, a slow commit) bytes
            // may be waiting in the socket. Let I/O run once before calling the connection stale.
            settled = await Promise.race<Settled | typeof TIMER>([pending, nextTurn().then(() => TIMER)]);
          }
          if (settled === TIMER) {
            if (signal.aborted) return { kind: 'stopped' };
            const now = this.#clock.now();
            if (now >= staleAt) return { kind: 'stale' };
            if (now >= deadline) return { kind: 'timed-out' };
            if (now >= batchAt || now >= heartbeatAt) {
              await this.#flush(via, now >= batchAt ? 'time' : 'heartbeat', now >= heartbeatAt);
              // Time spent committing is not time the server was silent.
              waitStartedAt += this.#clock.now() - now;
            }
            continue;
          }
          pending = undefined;
          if (!settled.ok) {
            if (signal.aborted) return { kind: 'stopped' };
            return { kind: 'error', error: settled.error };
          }
          if (settled.result.done) return { kind: 'ended' };
          queued = settled.result.value;
          next = 0;
          continue;
        }
        next += 1;
        if (!delivered) {
          // A connection that delivers is healthy again: the next back-off starts small.
          delivered = true;
          this.#attempt = 0;
        }
        if (via === 'stream') this.#lastStreamFrameAt = frame.receivedAt;
        const classified = classifyFrame(frame);
        switch (classified.kind) {
          case 'data': {
            this.#counters.frames.data += 1;
            pokesWithoutData = 0;
            if (via === 'stream') {
              this.#idleRound = 0;
              this.#quietFromMs = frame.receivedAt;
            }
            this.#push(via, {
              kind: 'data',
              payload: classified.payload,
              createdAt: classified.createdAt,
              receivedAt: frame.receivedAt,
            });
            const createdAtMs = parseTime(classified.createdAt);
            if (catchUpAtMs !== undefined && createdAtMs !== undefined && createdAtMs >= catchUpAtMs) {
              return { kind: 'caught-up', why: `created_at ${classified.createdAt}` };
            }
            break;
          }
          case 'bad':
            this.#counters.frames.bad += 1;
            if (via === 'stream') this.#quietFromMs = frame.receivedAt;
            this.#log.warn({ event: classified.event, reason: classified.reason }, 'SSE frame quarantined');
            this.#push(via, {
              kind: 'bad',
              text: classified.text,
              reason: classified.reason,
              receivedAt: frame.receivedAt,
            });
            break;
          case 'poke':
            this.#counters.frames.poke += 1;
            pokesWithoutData += 1;
            this.#notePlatformTime(classified.payload, frame.receivedAt);
            if (via === 'stream') this.#lastPokeAtMs = frame.receivedAt;
            if (
              via === 'stream' &&
              idleHygiene.enabled &&
              pokesWithoutData >= idleHygiene.maxPokesWithoutData
            ) {
              return { kind: 'idle' };
            }
            // Pokes never end a replay: one that starts slowly pokes before its first data frame.
            break;
          case 'other':
            this.#counters.frames.other += 1;
            this.#counters.otherEvents[classified.event] =
              (this.#counters.otherEvents[classified.event] ?? 0) + 1;
            this.#log.debug({ event: classified.event }, 'SSE frame with another event name ignored');
            break;
        }
        if (this.#buffer.length >= microBatch.maxFrames) await this.#flush(via, 'count', false);
        else if (this.#buffer.length > 0 && this.#clock.now() >= this.#bufferSince + microBatch.maxWaitMs) {
          await this.#flush(via, 'time', false);
        }
      }
    } finally {
      connection.controller.abort();
      // Not awaited: the generator finishes once the aborted read settles.
      void batches.return(undefined).catch(() => {});
      // Frames of the last chunk after the one that ended this connection (idle, caught up, stop) were
      // fully received and the server counts them as delivered: keep them for the next commit.
      for (const rest of queued.slice(next)) this.#keep(via, rest);
    }
  }

  /** Buffers a frame without acting on it (no state decisions), for frames left over at a close. */
  #keep(via: StreamVia, frame: SseFrame): void {
    if (via === 'stream') this.#lastStreamFrameAt = frame.receivedAt;
    const classified = classifyFrame(frame);
    this.#counters.frames[classified.kind] += 1;
    if (via === 'stream' && (classified.kind === 'data' || classified.kind === 'bad'))
      this.#quietFromMs = frame.receivedAt;
    if (classified.kind === 'data') {
      this.#push(via, {
        kind: 'data',
        payload: classified.payload,
        createdAt: classified.createdAt,
        receivedAt: frame.receivedAt,
      });
    } else if (classified.kind === 'bad') {
      this.#push(via, {
        kind: 'bad',
        text: classified.text,
        reason: classified.reason,
        receivedAt: frame.receivedAt,
      });
    } else if (classified.kind === 'other') {
      this.#counters.otherEvents[classified.event] = (this.#counters.otherEvents[classified.event] ?? 0) + 1;
    }
  }

  #push(via: StreamVia, item: DataFrame): void {
    if (this.#buffer.length === 0) this.#bufferSince = this.#clock.now();
    this.#bufferVia = via;
    this.#buffer.push(item);
  }

  /**
   * Commits the buffered frames with the checkpoint they reach. With `checkpointOnly`, commits even
   * without frames when the checkpoint changed (gap opened or closed, heartbeat, stop).
   */
  async #flush(via: StreamVia, reason: CommitReason, checkpointOnly: boolean): Promise<void> {
    const frames = this.#buffer;
    const next = this.#nextCheckpoint(frames);
    if (frames.length === 0 && (!checkpointOnly || sameCheckpoint(next, this.#checkpoint))) {
      this.#lastCommitAt = this.#clock.now();
      return;
    }
    const commitVia = frames.length > 0 ? this.#bufferVia : via;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.#deps.commit(frames, next, { via: commitVia, reason });
        break;
      } catch (error) {
        if (attempt >= this.options.commitAttempts) {
          this.#log.error({ err: error, frames: frames.length }, 'SSE commit failed; giving up');
          throw error;
        }
        const delay = backoffDelay(attempt - 1, this.options.backoff, this.#random);
        this.#log.warn({ err: error, attempt, delayMs: delay }, 'SSE commit failed; retrying');
        // Not cancelled by stop: the frames are only in memory, so keep trying to land them.
        await sleepQuietly(this.#clock, delay, undefined);
      }
    }
    this.#buffer = [];
    this.#checkpoint = next;
    this.#lastCommitAt = this.#clock.now();
    this.#counters.commits += 1;
    this.#counters.committedFrames += frames.length;
  }

  #nextCheckpoint(frames: DataFrame[]): StreamCheckpoint {
    const next: StreamCheckpoint = { ...this.#checkpoint };
    let newestMs = parseTime(next.newestCreatedAt);
    for (const frame of frames) {
      if (frame.kind !== 'data') continue;
      const ms = parseTime(frame.createdAt);
      if (ms !== undefined && (newestMs === undefined || ms > newestMs)) {
        newestMs = ms;
        next.newestCreatedAt = frame.createdAt;
      }
    }
    if (this.#lastStreamFrameAt !== undefined)
      next.lastLiveAt = new Date(this.#lastStreamFrameAt).toISOString();
    if (this.#gapStartMs !== undefined) next.lastDisconnectAt = new Date(this.#gapStartMs).toISOString();
    else delete next.lastDisconnectAt;
    if (this.#platformOffsetMs !== undefined) next.platformOffsetMs = this.#platformOffsetMs;
    return next;
  }

  /** The main stream dropped: the gap starts at its last frame (anything after may be missing). */
  #openGap(): void {
    if (this.#gapStartMs === undefined) this.#gapStartMs = this.#lastStreamFrameAt ?? this.#clock.now();
  }

  #gapNeedsReplay(): boolean {
    return this.#gapStartMs !== undefined && this.#clock.now() - this.#gapStartMs > this.options.gapAfterMs;
  }

  #gapDescription(): string {
    if (this.#gapStartMs === undefined) return 'no gap';
    return `gap since ${new Date(this.#gapStartMs).toISOString()}: replay`;
  }

  async #reportGap(gap: Parameters<NonNullable<StreamConsumerDeps['onGapTooLong']>>[0]): Promise<void> {
    this.#counters.gapsTooLong += 1;
    this.#log.warn(gap, 'SSE gap too long for replay/stream to fill alone; plan a REST backfill for it');
    await this.#deps.onGapTooLong?.(gap);
  }

  /** The poke's `ts` is the platform's clock: remember how far it is from ours. */
  #notePlatformTime(payload: unknown, receivedAt: number): void {
    const ts = parseTime((payload as { ts?: string } | null)?.ts);
    if (ts !== undefined) this.#platformOffsetMs = ts - receivedAt;
  }

  /**
   * The gap's replay plan with T on the platform's clock (STATE-MACHINE.md, "Which clock T is on"):
   * the gap start (our clock) shifted by the offset the last poke showed, and never before the newest
   * committed `created_at`. A skewed local clock then cannot end a replay early.
   */
  #planReplay(nowMs: number): ReturnType<typeof planGapFill> {
    const offset = this.#platformOffsetMs ?? 0;
    const gapStart = this.#gapStartMs ?? nowMs;
    const plan = planGapFill(nowMs + offset, gapStart + offset, this.options);
    const newest = parseTime(this.#checkpoint.newestCreatedAt);
    return newest !== undefined && newest > plan.catchUpAtMs ? { ...plan, catchUpAtMs: newest } : plan;
  }

  #nextBackoff(): number {
    const { backoff, staleAfterMs } = this.options;
    // Never longer than a silent connection is tolerated (STATE-MACHINE.md, "Timing rules").
    const delay = reconnectDelay(this.#attempt, backoff, Math.min(backoff.maxMs, staleAfterMs), this.#random);
    this.#attempt += 1;
    return delay;
  }

  #backOff(delayMs: number, then: 'connecting' | 'replaying', reason: string): void {
    this.#delayMs = delayMs;
    this.#afterBackoff = then;
    this.#transition('backing_off', `${reason}; retry in ${delayMs} ms`);
  }

  async #stop(reason: string): Promise<void> {
    const wasLive = this.#state === 'live';
    this.#closeConnection();
    // A clean stop is a disconnect too: the next start measures its downtime from here.
    if (wasLive) this.#openGap();
    await this.#flush(this.#bufferVia, 'stop', true);
    this.#transition('stopped', reason);
  }

  async #open(signal: AbortSignal, open: (signal: AbortSignal) => Promise<SseSource>): Promise<Connection> {
    const controller = new AbortController();
    const linked = AbortSignal.any([signal, controller.signal]);
    try {
      const source = await open(linked);
      return { controller, signal: linked, source };
    } catch (error) {
      controller.abort();
      throw error;
    }
  }

  #closeConnection(): void {
    this.#connection?.controller.abort();
    this.#connection = undefined;
  }

  #transition(to: StreamState, reason: string): void {
    const from = this.#state;
    this.#state = to;
    this.#log.info({ from, to, reason }, 'SSE consumer state');
    this.#deps.onStateChange?.(from, to, reason);
  }
}

/** Shorthand for `new StreamConsumer(deps, options)`. */
export function createStreamConsumer(
  deps: StreamConsumerDeps,
  options: StreamConsumerOptionsInput = {},
): StreamConsumer {
  return new StreamConsumer(deps, options);
}

/** Every counter at zero (also the start of the summaries that add up several consumers). */
export function emptyStreamCounters(): StreamCounters {
  return {
    frames: { data: 0, poke: 0, other: 0, bad: 0 },
    otherEvents: {},
    connects: 0,
    reconnects: 0,
    rebalancing: 0,
    errors: 0,
    staleDetections: 0,
    idleDrops: 0,
    replays: 0,
    replaysCaughtUp: 0,
    gapsTooLong: 0,
    commits: 0,
    committedFrames: 0,
  };
}

function pickCheckpoint(loaded: StreamCheckpoint): StreamCheckpoint {
  const out: StreamCheckpoint = {};
  if (typeof loaded.newestCreatedAt === 'string') out.newestCreatedAt = loaded.newestCreatedAt;
  if (typeof loaded.lastLiveAt === 'string') out.lastLiveAt = loaded.lastLiveAt;
  if (typeof loaded.lastDisconnectAt === 'string') out.lastDisconnectAt = loaded.lastDisconnectAt;
  if (typeof loaded.platformOffsetMs === 'number' && Number.isFinite(loaded.platformOffsetMs))
    out.platformOffsetMs = loaded.platformOffsetMs;
  return out;
}

function sameCheckpoint(a: StreamCheckpoint, b: StreamCheckpoint): boolean {
  return (
    a.newestCreatedAt === b.newestCreatedAt &&
    a.lastLiveAt === b.lastLiveAt &&
    a.lastDisconnectAt === b.lastDisconnectAt &&
    a.platformOffsetMs === b.platformOffsetMs
  );
}

function parseTime(value: string | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** An error's message for reasons and logs; redacted because HTTP errors may quote a URL with its token. */
function describe(error: unknown): string {
  return redactKnownSecrets(error instanceof Error ? error.message : String(error));
}

async function sleepQuietly(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    // setTimeout treats delays past 2^31-1 ms as 1 ms.
    await clock.sleep(Math.min(Math.max(0, ms), 2_147_483_647), signal);
  } catch {
    // An aborted sleep ends early; callers look at their signal.
  }
}

/** Resolves after pending I/O callbacks of this event-loop turn have run. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Waits for `pending`, at most `ms`, or until `signal` aborts; TIMER when it did not settle in time. */
async function raceWithTimer<T>(
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
