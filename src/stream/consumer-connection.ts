/**
 * The main stream's connection, pure: opened (the gap it closes), a failed open of the stream or a
 * replay read in the consumer's terms (back off, wait out a 429, give a replay up, or fail), the timers
 * that end a silent connection, and what happens when the main stream's connection has closed.
 */
import { classifyFailure } from '../errors/index.ts';
import { hold, stop, uncleanEnd } from './consumer-commit.ts';
import { openGap } from './consumer-cursor.ts';
import {
  type ConnectionEnd,
  type ConnectionState,
  type ConsumerEvent,
  type Effect,
  endConnection,
  log,
  type MachineState,
  type OpenFailureKind,
  openConnection,
  transition,
} from './consumer-machine.ts';
import { giveUpReplay, replayFailed } from './consumer-replay.ts';
import { backOff, idleDelay, nextBackoff, rateLimitedDelay } from './consumer-waits.ts';
import { flush } from './micro-batch.ts';
import type { StreamVia } from './types.ts';

/** A failed open, read in the consumer's terms (`OpenFailureKind`) from the one `classifyFailure`. */
export function classifyOpenFailure(error: unknown): OpenFailureKind {
  const failure = classifyFailure(error);
  if (failure.kind === 'permanent') return failure.unauthorized ? 'permanent' : 'refused';
  if (failure.kind === 'rate-limited') return 'rate-limited';
  return failure.kind === 'rebalancing' ? 'rebalancing' : 'retry';
}

/** `continue` in `stale`: the silent connection was dropped; back off before opening again. */
export function staleDropped(s: MachineState, fx: Effect[], jitter: number): void {
  s.counters.staleDetections += 1;
  const then = s.staleVia === 'replay' ? 'replaying' : 'connecting';
  backOff(s, fx, nextBackoff(s, jitter), then, 'stale connection dropped');
}

/** The main stream answered 200: live, and the gap (if any) is closed. */
export function connected(s: MachineState, fx: Effect[], now: number): void {
  s.connection = openConnection('stream', undefined, Infinity, now);
  s.counters.connects += 1;
  if (s.counters.connects > 1) s.counters.reconnects += 1;
  // Connected: the stream resumes from its own server-side checkpoint, so the gap is closed.
  s.lastStreamFrameAt = now;
  s.quietFromMs = now;
  const hadGap = s.gapStartMs !== undefined || s.uncleanEnd !== undefined;
  // A connection that never committed anything commits that it is live now: a crash before its first
  // data commit is then found at the next start (and its gap begins at `deliveryFrom`).
  const firstConnect = s.cursor.lastLiveAt === undefined;
  s.gapStartMs = undefined;
  s.uncleanEnd = undefined;
  s.gapReported = false;
  if (hadGap || firstConnect) flush(s, fx, now, 'stream', 'state-change', true);
  transition(s, fx, 'live', 'connected');
  fx.push({ kind: 'read' });
}

/** The stream or the planned replay could not be opened. */
export function openFailed(
  s: MachineState,
  fx: Effect[],
  event: Extract<ConsumerEvent, { kind: 'open-failed' }>,
  via: StreamVia,
) {
  const { failure, error, message, now } = event;
  const what = via === 'stream' ? 'stream connect' : s.options.role === 'pass' ? 'pass' : 'replay';
  if (failure === 'permanent' || (failure === 'refused' && via === 'stream')) {
    log(fx, 'error', { err: error }, `SSE ${what} refused permanently`);
    fx.push({ kind: 'fail', error });
    return;
  }
  if (failure === 'refused') return giveUpReplay(s, fx, now, `replay refused: ${message}`, error);
  if (failure === 'rate-limited') {
    // The hour's budget is spent: wait minutes, not seconds (independent of the stale rule's cap).
    s.counters.rateLimited += 1;
    const delay = rateLimitedDelay(
      s.rateLimitAttempt,
      s.options.backoff,
      () => event.jitter,
      event.retryAfterMs,
    );
    s.rateLimitAttempt += 1;
    const why = `${what} answered 429 (rate limited)`;
    log(fx, 'warn', { err: error, delayMs: delay }, `SSE ${why}`);
    return backOff(s, fx, delay, via === 'replay' ? 'replaying' : 'connecting', why);
  }
  if (failure === 'rebalancing') s.counters.rebalancing += 1;
  else s.counters.errors += 1;
  if (via === 'replay' && replayFailed(s)) {
    return giveUpReplay(s, fx, now, `replay failed ${s.options.replayAttempts} times: ${message}`, error);
  }
  let delay = nextBackoff(s, event.jitter);
  if (event.retryAfterMs !== undefined && event.retryAfterMs > delay) delay = event.retryAfterMs;
  const why = failure === 'rebalancing' ? `${what} answered 422 (rebalancing)` : `${what} failed: ${message}`;
  log(fx, 'warn', { err: error, delayMs: delay }, `SSE ${why}`);
  backOff(s, fx, delay, via === 'replay' ? 'replaying' : 'connecting', why);
}

/** A timer came due while reading: stale, the replay's deadline, the micro-batch's age, the heartbeat. */
export function tick(s: MachineState, c: ConnectionState, fx: Effect[], now: number) {
  const { staleAfterMs, microBatch, heartbeatCommitMs } = s.options;
  if (now >= c.waitStartedAt + staleAfterMs) return endConnection(c, fx, { kind: 'stale' });
  if (now >= c.deadline) return endConnection(c, fx, { kind: 'timed-out' });
  const batchDue = s.buffer.length > 0 && now >= s.bufferSince + microBatch.maxWaitMs;
  const heartbeatDue = c.via === 'stream' && now >= s.lastCommitAt + heartbeatCommitMs;

  if (!batchDue && !heartbeatDue) return;
  if (flush(s, fx, now, c.via, batchDue ? 'time' : 'heartbeat', heartbeatDue)) c.commitStartedAt = now;
}

/**
 * The main stream's connection has closed: a gap opens (reported when the end was unclean), then a
 * back-off, `stale`, an idle pause, `holding` after a failed commit, or `stopped`.
 */
export function liveEnded(s: MachineState, fx: Effect[], now: number, c: ConnectionState, jitter: number) {
  const end = c.ending as ConnectionEnd;
  switch (end.kind) {
    case 'stopped':
      // Closed by us right after a poke: nothing was flowing, so nothing was in flight. Otherwise the
      // platform may have sent frames we never read.
      if (c.lastFrame !== 'poke') {
        openGap(s, now);
        uncleanEnd(s, fx, now, 'stopped', 'stop');
      }
      return stop(s, fx, now, 'stop requested');
    case 'stale':
      openGap(s, now);
      uncleanEnd(s, fx, now, 'stale', 'state-change');
      s.staleVia = 'stream';
      transition(s, fx, 'stale', `no frame for ${s.options.staleAfterMs} ms`);
      fx.push({ kind: 'continue' });
      return;
    case 'idle': {
      // Voluntary drop after pokes (connection hygiene): nothing was flowing, so no gap opens.
      const { backoff, idleHygiene } = s.options;
      s.counters.idleDrops += 1;
      flush(s, fx, now, 'stream', 'state-change', true);
      const delay = Math.max(backoff.minMs, idleDelay(s.idleRound, idleHygiene.delaysMs));
      s.idleRound += 1;
      return backOff(
        s,
        fx,
        delay,
        'connecting',
        `idle: ${idleHygiene.maxPokesWithoutData} pokes without data`,
      );
    }
    case 'commit-failed':
      openGap(s, now);
      uncleanEnd(s, fx, now, 'commit-failed');
      return hold(s, fx, jitter, 'commit failed: the stream is closed until it lands');
    default: {
      // `ended`, `error` (and the replay outcomes, which cannot happen here) open a gap.
      s.counters.errors += 1;
      openGap(s, now);
      uncleanEnd(s, fx, now, 'dropped', 'state-change');
      const why = end.kind === 'error' ? `disconnected: ${end.message}` : 'server ended the stream';
      log(fx, 'warn', { err: end.kind === 'error' ? end.error : undefined }, `SSE stream ${why}`);
      return backOff(s, fx, nextBackoff(s, jitter), 'connecting', why);
    }
  }
}
