/**
 * The stream consumer as data: the state the transition function (next-consumer-state.ts) works on, the
 * events the driver (stream-consumer.ts) feeds it and the effects it asks the driver to perform; the
 * micro-batch's persistent list and the counters; and the verbs every concern of the transition function
 * speaks (announce a state, log, end a connection, go connecting or replaying, report a gap), each one
 * effect. Nothing here does I/O or reads a clock: every event carries its own `now`, and an event after
 * which the machine may back off carries `jitter`, one uniform draw in [0, 1) for the delay. See
 * STATE-MACHINE.md next to this file.
 */
import type { StreamConsumerOptions } from '../config/stream-options.ts';
import type { StreamCursorValue, StreamGap } from '../warehouse/cursors.ts';
import type { CommitReason, DataFrame, SseFrame, StreamCounters, StreamState, StreamVia } from './types.ts';

/** Why an open connection ends; the machine acts on it once the driver has closed it (`closed`). */
export type ConnectionEnd =
  | { kind: 'stopped' }
  | { kind: 'stale' }
  | { kind: 'ended' }
  | { kind: 'error'; error: unknown; message: string }
  | { kind: 'idle' }
  | { kind: 'timed-out' }
  | { kind: 'caught-up'; why: string }
  /** Replay only: pokes at or after T and T not reached: nothing more flows, but it did not hand off. */
  | { kind: 'quiet'; why: string }
  /** A commit failed while reading: stop reading, so that nothing more is held in memory. */
  | { kind: 'commit-failed' };

/** The connection being read (main stream in `live`, replay in `replaying`). */
export interface ConnectionState {
  via: StreamVia;
  /** Replay only: the hand-off, the first event with `created_at` ≥ this (platform clock, ms). */
  catchUpAtMs: number | undefined;
  /** Replay only: when it is given up (`replayTimeoutMs` after the gap's first attempt). */
  deadline: number;
  /** When the driver last started waiting for bytes: stale at this + `staleAfterMs`. */
  waitStartedAt: number;
  pokesWithoutData: number;
  /** Replay and pass: pokes in a row stamped at or after the hand-off time (`quietPokes` of them end it). */
  pokesAfterCatchUp: number;
  /** Kind of the last frame received: a connection we close right after a poke lost nothing in flight. */
  lastFrame: 'data' | 'poke' | 'other' | 'bad' | 'oversized' | undefined;
  delivered: boolean;
  /** Set by a time/heartbeat commit while waiting: the commit's duration is not silence. */
  commitStartedAt: number | undefined;
  /** Set once the machine decided this connection ends; frames after that are only kept. */
  ending: ConnectionEnd | undefined;
}

/** A replay planned on entering `replaying`, opened next (`open-replay`). */
export interface PlannedReplay {
  date: string;
  catchUpAtMs: number;
  deadline: number;
}

/** A commit handed to the driver: what it writes, kept until it landed (or held after it failed). */
export interface PendingCommit {
  frames: DataFrame[];
  cursor: StreamCursorValue;
  via: StreamVia;
  reason: CommitReason;
}

/** How a pass of the reconciliation stream ended (`role: 'pass'`). */
export type PassOutcome = 'caught-up' | 'timed-out' | 'failed' | 'stopped';

export interface MachineState {
  readonly options: StreamConsumerOptions;
  phase: StreamState;
  counters: StreamCounters;
  /** The cursor as last committed (or loaded). */
  cursor: StreamCursorValue;
  /** Handed to `commit` and not yet confirmed (`committed`): at most one at a time. */
  committing: PendingCommit | undefined;
  /**
   * A commit that failed, held in memory until a retry lands it (state `holding`). Reading has stopped,
   * so this, the buffer and the writer's batch in flight are all the frames held.
   */
  unsaved: PendingCommit | undefined;
  /** Failed commit retries in a row (back-off of `holding`). */
  holdAttempt: number;
  /** Frames read for the next micro-batch, newest first (a persistent list: consumer-machine.ts). */
  buffer: FrameList;
  /** Bytes of the buffered frames' data (`microBatch.maxBytes`). */
  bufferBytes: number;
  bufferVia: StreamVia;
  bufferSince: number;
  lastCommitAt: number;
  /** Start T of the open gap (ms), mirrored in `cursor.lastDisconnectAt`; undefined while live. */
  gapStartMs: number | undefined;
  /** The unclean end of the last disconnect, mirrored in `cursor.uncleanEnd`; cleared once live again. */
  uncleanEnd: StreamGap | undefined;
  gapReported: boolean;
  /** Last frame on the main stream (ms): "connected until here". */
  lastStreamFrameAt: number | undefined;
  /** Since when the main stream has been live and without data (ms); see consumer-machine.ts. */
  quietFromMs: number | undefined;
  lastPokeAtMs: number | undefined;
  /** Platform clock minus this clock, from the last poke's `ts`; undefined until a poke arrived. */
  platformOffsetMs: number | undefined;
  /** When the replay of the open gap first started (ms), for `replayTimeoutMs`; reset at hand-off. */
  replayStartedAt: number | undefined;
  attempt: number;
  /** 429s in a row (their own back-off, STATE-MACHINE.md "Back-off"); reset when a connection delivers. */
  rateLimitAttempt: number;
  /**
   * Replay only: data frames created before this (platform ms) were committed already (by this
   * connection or, for an organization's one replay, by every one of its connections) and are counted,
   * not written again: a replay cut short must not leave an older version of a record that the
   * warehouse never had the newer version of.
   */
  replayFloorMs: number | undefined;
  idleRound: number;
  replayFailures: number;
  delayMs: number;
  afterBackoff: 'connecting' | 'replaying';
  staleVia: StreamVia;
  replay: PlannedReplay | undefined;
  connection: ConnectionState | undefined;
  /** `role: 'pass'`: how the pass ended (undefined while it runs). */
  passOutcome: PassOutcome | undefined;
  /** `role: 'pass'`, caught up: everything created before this (platform ms) was delivered. */
  passReachedMs: number | undefined;
  /**
   * `role: 'pass'`: it ended right after a poke with nothing uncommitted, so nothing was in flight: the
   * next pass of the reconciliation stream goes on exactly where this one stopped.
   */
  passEndedQuiet: boolean;
  /**
   * Platform time of the last poke on this connection (the main stream, or a pass) that found nothing
   * uncommitted: everything the platform had sent it before then is committed (`StreamCursorValue.quietAt`).
   */
  quietThroughMs: number | undefined;
}

export type ConsumerEvent =
  /** The cursor was loaded: leave `stopped`. */
  | { kind: 'start'; now: number; cursor: StreamCursorValue | null }
  /** The run's signal aborted: flush and stop. */
  | { kind: 'stop'; now: number }
  /** A step boundary with nothing to wait for: `stale` backs off, `replaying` plans and opens a replay. */
  | { kind: 'continue'; now: number; jitter: number }
  /** The connection answered 200; `serverTimeMs`: its `Date` header, when it had one. */
  | { kind: 'opened'; now: number; serverTimeMs?: number | undefined }
  | {
      kind: 'open-failed';
      now: number;
      failure: OpenFailureKind;
      error: unknown;
      /** The error's message, redacted. */
      message: string;
      retryAfterMs: number | undefined;
      jitter: number;
    }
  /** The driver started waiting for the next bytes of the connection. */
  | { kind: 'read-started'; now: number }
  | { kind: 'frame'; now: number; frame: SseFrame }
  /** A timer of the connection (stale, micro-batch age, heartbeat, replay deadline) came due. */
  | { kind: 'tick'; now: number }
  /** The body ended (`error` undefined) or failed. */
  | { kind: 'disconnected'; now: number; error?: unknown; message?: string }
  /** The driver closed the connection the machine asked to close, and fed the frames left over. */
  | { kind: 'closed'; now: number; jitter: number }
  | { kind: 'committed'; now: number }
  /**
   * The commit handed over failed; `permanent`: the same write would fail again (no retry). `earlier`: the
   * frames of a write handed over before it, which the pipelined writer had started and which failed: the
   * machine holds them too, first (the writer keeps nothing).
   */
  | {
      kind: 'commit-failed';
      now: number;
      permanent: boolean;
      earlier?: DataFrame[] | undefined;
      error: unknown;
      /** The error's message, redacted. */
      message: string;
      jitter: number;
    }
  /**
   * The answer to `claim-replay`: whether this connection runs the organization's replay, and the
   * floor below which replayed data was committed already (platform ms).
   */
  | { kind: 'replay-claimed'; now: number; granted: boolean; floorMs: number | undefined }
  | { kind: 'slept'; now: number };

export type EventKind = ConsumerEvent['kind'];

export const EVENT_KINDS = [
  'start',
  'stop',
  'continue',
  'opened',
  'open-failed',
  'read-started',
  'frame',
  'tick',
  'disconnected',
  'closed',
  'committed',
  'commit-failed',
  'replay-claimed',
  'slept',
] as const satisfies readonly EventKind[];

export const STREAM_STATES = [
  'stopped',
  'connecting',
  'live',
  'stale',
  'backing_off',
  'replaying',
  'holding',
] as const satisfies readonly StreamState[];

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type Effect =
  /** Announce a state change (`onStateChange`). */
  | { kind: 'notify'; from: StreamState; to: StreamState; reason: string }
  | { kind: 'log'; level: LogLevel; fields: Record<string, unknown>; message: string }
  /** Write frames + cursor in one transaction; then feed `committed` or `commit-failed`. */
  | ({ kind: 'commit' } & PendingCommit)
  /** Hand a gap to `onGap` (awaited). */
  | { kind: 'report-gap'; gap: StreamGap }
  /** Stop reading the open connection; feed the frames left over, then `closed`. */
  | { kind: 'close' }
  /** A permanent error: `run` rejects with it. */
  | { kind: 'fail'; error: unknown }
  // The effects below wait for something; each is the last of its batch.
  /** Ask whether this connection runs the organization's replay; feed `replay-claimed`. */
  | { kind: 'claim-replay' }
  | { kind: 'open-stream' }
  | { kind: 'open-replay'; date: string }
  | { kind: 'read' }
  | { kind: 'sleep'; ms: number }
  | { kind: 'continue' };

export type EffectKind = Effect['kind'];

/** Effects that wait (the driver checks its signal before each one; a step ends at one). */
export const WAITING_EFFECTS: ReadonlySet<EffectKind> = new Set([
  'claim-replay',
  'open-stream',
  'open-replay',
  'read',
  'sleep',
  'continue',
]);

export interface Transition {
  state: MachineState;
  effects: Effect[];
}

export function initialMachineState(options: StreamConsumerOptions): MachineState {
  return {
    options,
    phase: 'stopped',
    counters: emptyStreamCounters(),
    cursor: {},
    committing: undefined,
    unsaved: undefined,
    holdAttempt: 0,
    buffer: NO_FRAMES,
    bufferBytes: 0,
    bufferVia: 'stream',
    bufferSince: 0,
    lastCommitAt: 0,
    gapStartMs: undefined,
    uncleanEnd: undefined,
    gapReported: false,
    lastStreamFrameAt: undefined,
    quietFromMs: undefined,
    lastPokeAtMs: undefined,
    platformOffsetMs: undefined,
    replayStartedAt: undefined,
    attempt: 0,
    rateLimitAttempt: 0,
    replayFloorMs: undefined,
    idleRound: 0,
    replayFailures: 0,
    delayMs: 0,
    afterBackoff: 'connecting',
    staleVia: 'stream',
    replay: undefined,
    connection: undefined,
    passOutcome: undefined,
    passReachedMs: undefined,
    passEndedQuiet: false,
    quietThroughMs: undefined,
  };
}

/**
 * The micro-batch being gathered (`MachineState.buffer`), as a persistent list, newest frame first.
 *
 * Appending is O(1) and never changes a list that another state still holds: the transition function
 * stays pure (`next` never changes the state it is given, STATE-MACHINE.md I10) without copying the
 * whole batch on every frame (`[...buffer, item]` per frame was O(n²) over a micro-batch). An array
 * appended in place would not do: `next` copies the state shallowly, so the state it was given would
 * see the frame too. The frames become an array once, in arrival order, when the batch is committed
 * (`framesInOrder`, called by `flush`), so a commit never shares an array with the buffer.
 */
export interface FrameList {
  /** How many frames the list holds. */
  readonly length: number;
  /** The frame appended last; undefined only in the empty list. */
  readonly newest: DataFrame | undefined;
  /** The list `newest` was appended to; undefined only in the empty list. */
  readonly before: FrameList | undefined;
}

/** The empty list (shared: nothing ever changes a list). */
export const NO_FRAMES: FrameList = Object.freeze({ length: 0, newest: undefined, before: undefined });

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
    replaysShared: 0,
    replaySkipped: 0,
    gaps: 0,
    uncleanEnds: 0,
    rateLimited: 0,
    commits: 0,
    committedFrames: 0,
    commitFailures: 0,
  };
}

export function copyStreamCounters(c: StreamCounters): StreamCounters {
  return { ...c, frames: { ...c.frames }, otherEvents: { ...c.otherEvents } };
}

/**
 * How the consumer reads a failed open of the stream or the replay (`classifyOpenFailure`,
 * consumer-connection.ts). `rebalancing`: a 422 right after a disconnect (back off briefly, retry).
 * `rate-limited`: a 429 (back off for minutes: the hour's budget is spent). `permanent`: 401/403, the
 * token is wrong (stop). `refused`: any other permanent failure: permanent for the stream, and for a
 * replay "this gap cannot be replayed". `retry`: everything else (5xx, network, unknown).
 */
export type OpenFailureKind = 'rebalancing' | 'rate-limited' | 'retry' | 'permanent' | 'refused';

/** A connection just opened: nothing read yet, silent since `now`. */
export function openConnection(
  via: StreamVia,
  catchUpAtMs: number | undefined,
  deadline: number,
  now: number,
): ConnectionState {
  return {
    via,
    catchUpAtMs,
    deadline,
    waitStartedAt: now,
    pokesWithoutData: 0,
    pokesAfterCatchUp: 0,
    lastFrame: undefined,
    delivered: false,
    commitStartedAt: undefined,
    ending: undefined,
  };
}

/*
 * The verbs. Each mutates the draft state it is given (a copy `next` made) and appends the effects the
 * driver performs, in order.
 */

export function transition(s: MachineState, fx: Effect[], to: StreamState, reason: string): void {
  fx.push({ kind: 'notify', from: s.phase, to, reason });
  s.phase = to;
}

export function log(fx: Effect[], level: LogLevel, fields: Record<string, unknown>, message: string) {
  fx.push({ kind: 'log', level, fields, message });
}

/** Decides that the open connection ends; the driver closes it and feeds `closed`. */
export function endConnection(c: ConnectionState, fx: Effect[], end: ConnectionEnd): void {
  c.ending = end;
  fx.push({ kind: 'close' });
}

export function toConnecting(s: MachineState, fx: Effect[], reason: string): void {
  transition(s, fx, 'connecting', reason);
  fx.push({ kind: 'open-stream' });
}

export function toReplaying(s: MachineState, fx: Effect[], reason: string): void {
  transition(s, fx, 'replaying', reason);
  fx.push({ kind: 'continue' });
}

export function reportGap(s: MachineState, fx: Effect[], gap: StreamGap): void {
  s.counters.gaps += 1;
  log(fx, 'warn', { ...gap }, 'SSE gap: events in it may be missing until a reconciliation pass covers it');
  fx.push({ kind: 'report-gap', gap });
}
