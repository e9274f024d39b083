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
  // `running`, not the promise, says whether the loop runs: a loop that finds nothing to do (the signal
  // already aborted) ends synchronously, before `request` could store its promise, and a stored settled
  // promise would keep `drain` awaiting it forever.
  let running = false;
  let loop: Promise<void> = Promise.resolve();

  const waitUntilReady = async () => {
    const until = Date.now() + maxWaitMs;
    while (!options.ready() && Date.now() < until && !options.signal.aborted) {
      await abortableSleep(100, options.signal).catch(() => {});
    }
  };

  const runLoop = async () => {
    try {
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
    } finally {
      running = false;
    }
  };

  return {
    request() {
      wanted = true;
      if (running) return;
      running = true;
      loop = runLoop();
    },
    idle: () => !running,
    async drain() {
      while (running) await loop;
    },
    passes: () => [...done],
  };
}
