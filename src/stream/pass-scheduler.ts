/**
 * Runs reconciliation passes in this process when asked (`validic-sync stream`; the worker queues the
 * `streams.reconcile` job instead): one at a time, and each only once the primary stream has caught up
 * (`ready`), so that what the pass finds missing is what the primary lost, not what it was about to
 * deliver. A request while a pass runs is served by one more pass after it (the running one may have
 * started before the gap it is asked for).
 */
import { abortableSleep } from '../time/clock.ts';
import type { ReconcilePassSummary } from './run-reconcile-pass.ts';

export interface PassScheduler {
  /** Asks for a pass: soon, once `ready()`. */
  request(): void;
  /** True when no pass is waiting or running. */
  idle(): boolean;
  /** Resolves once no pass is waiting or running. */
  drain(): Promise<void>;
  /** The passes run so far, in order. */
  passes(): ReconcilePassSummary[];
}

export interface PassSchedulerOptions {
  run(): Promise<ReconcilePassSummary>;
  /** Whether a pass may start now (the primary has caught up). */
  ready(): boolean;
  /** A pass waits at most this long for `ready` (the primary may stay down), ms. Default 60,000. */
  maxWaitMs?: number;
  /** Stops waiting (a pass that runs is stopped by its own signal). */
  signal: AbortSignal;
  onError(error: unknown): void;
}

export function createPassScheduler(options: PassSchedulerOptions): PassScheduler {
  const maxWaitMs = options.maxWaitMs ?? 60_000;
  const done: ReconcilePassSummary[] = [];
  let wanted = false;
  let loop: Promise<void> | undefined;

  const waitUntilReady = async () => {
    const until = Date.now() + maxWaitMs;
    while (!options.ready() && Date.now() < until && !options.signal.aborted) {
      await abortableSleep(100, options.signal).catch(() => {});
    }
  };

  const runLoop = async () => {
    while (wanted && !options.signal.aborted) {
      wanted = false;
      await waitUntilReady();
      if (options.signal.aborted) break;
      try {
        done.push(await options.run());
      } catch (error) {
        options.onError(error);
      }
    }
  };

  return {
    request() {
      wanted = true;
      if (loop) return;
      // Cleared once the loop has settled, never before it is stored: a loop that ends before its first
      // await (a request after the signal aborted, e.g. the gap of a Ctrl-C while data flowed) once set
      // `loop = undefined` first and was then stored settled for good, so `drain()` spun on it forever
      // in microtasks and the process hung, deaf even to a second Ctrl-C.
      const current: Promise<void> = runLoop().finally(() => {
        if (loop === current) loop = undefined;
      });
      loop = current;
    },
    idle: () => loop === undefined,
    async drain() {
      while (loop) await loop;
    },
    passes: () => [...done],
  };
}
