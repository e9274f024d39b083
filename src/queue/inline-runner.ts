/**
 * Runs job modules in this process, for one-shot commands without Redis. It keeps BullMQ's contract
 * where it matters to a job: payloads are validated on enqueue and on dequeue, a deterministic job id is
 * queued at most once, and a failure is handled as the BullMQ worker handles it (`jobRetryDecision`,
 * job-retry-decision.ts): a `PermanentError` is not retried, a 429, an outage or a transaction conflict
 * (deadlock, serialization failure) is waited out without spending an attempt, anything else is retried
 * with exponential back-off up to `attempts`. Unlike the long-running worker, a one-shot command should
 * end: once a job has waited `maxWaitWithoutAttemptMs` in all, further waits spend attempts like other
 * failures. Concurrency is bounded; an abort
 * stops new jobs from starting.
 */
import { EventEmitter } from 'node:events';
import { PermanentError, toError } from '../errors/index.ts';
import { backoffDelay } from '../time/backoff-delay.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import type { EnqueuePayload, PayloadSchemas } from './enqueue-job.ts';
import { type JobDefinition, retryOptionsOf } from './job-definition.ts';
import { type JobWaits, jobRetryDecision } from './job-retry-decision.ts';

export interface InlineJob {
  id: string;
  name: string;
  payload: unknown;
  attempt: number;
}

export interface InlineRunnerEvents {
  completed: [job: InlineJob, result: unknown];
  failed: [job: InlineJob, error: Error];
  retrying: [job: InlineJob, error: Error, delayMs: number];
  /** A 429, an outage or a transaction conflict: the same attempt runs again after `delayMs`. */
  waiting: [job: InlineJob, error: Error, delayMs: number];
}

export interface InlineRunnerOptions {
  catalog: Record<string, JobDefinition>;
  concurrency: number;
  /** Runs one job; the caller builds the job's context (log, warehouse, clients …). */
  execute: (definition: JobDefinition, job: InlineJob, signal: AbortSignal) => Promise<unknown>;
  signal?: AbortSignal;
  /** Back-off cap, so a one-shot command never sleeps for minutes between attempts. Default 30,000. */
  maxBackoffMs?: number;
  /**
   * Longest total wait per job for 429s and outages without spending attempts, ms (default 900,000);
   * past it they spend attempts, so a command against a service that never comes back still ends.
   */
  maxWaitWithoutAttemptMs?: number;
  /**
   * Waits after a 429 without `Retry-After` (default `maxBackoffMs`), after an outage (default
   * `DEFAULT_OUTAGE_DELAY_MS`, 5 s) and after a transaction conflict (`DEFAULT_CONFLICT_DELAY_MS`, 1 s).
   */
  waits?: JobWaits;
  /** Default the system clock; tests inject a manual one. */
  clock?: Clock;
}

/** `Payloads`: the catalog `enqueue` is typed by (catalog-inline-runner.ts passes the real one). */
export class InlineRunner<Payloads extends PayloadSchemas = any> extends EventEmitter<InlineRunnerEvents> {
  readonly #options: InlineRunnerOptions;
  readonly #pending: InlineJob[] = [];
  readonly #seen = new Set<string>();
  #running = 0;
  #sequence = 0;
  readonly #failures: { job: InlineJob; error: Error }[] = [];
  #idleWaiters: (() => void)[] = [];

  constructor(options: InlineRunnerOptions) {
    super();
    this.#options = options;
  }

  /** Queues a job; returns false when a job with the same deterministic id was queued before. */
  enqueue<Name extends keyof Payloads & string>(
    name: Name,
    payload: EnqueuePayload<Payloads[Name]>,
  ): boolean {
    const definition = this.#definition(name);
    const parsed = definition.payload.parse(payload);
    const id = definition.jobId?.(parsed) ?? `${name}:${++this.#sequence}`;
    if (this.#seen.has(id)) return false;
    this.#seen.add(id);
    this.#pending.push({ id, name, payload: parsed, attempt: 1 });
    this.#pump();
    return true;
  }

  /** Resolves when nothing is queued or running; returns the jobs that failed for good. */
  async drain(): Promise<{ job: InlineJob; error: Error }[]> {
    if (this.#running > 0 || (this.#pending.length > 0 && !this.#options.signal?.aborted)) {
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    }
    return [...this.#failures];
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  #definition(name: string): JobDefinition {
    const definition = this.#options.catalog[name];
    if (!definition) throw new PermanentError(`unknown job ${name}`);
    return definition;
  }

  #pump(): void {
    const signal = this.#options.signal;
    while (this.#running < this.#options.concurrency && this.#pending.length > 0 && !signal?.aborted) {
      const job = this.#pending.shift()!;
      this.#running++;
      void this.#runOne(job).finally(() => {
        this.#running--;
        this.#pump();
        this.#notifyIfIdle();
      });
    }
    this.#notifyIfIdle();
  }

  #notifyIfIdle(): void {
    const idle = this.#running === 0 && (this.#pending.length === 0 || this.#options.signal?.aborted);
    if (!idle) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  async #runOne(job: InlineJob): Promise<void> {
    const definition = this.#definition(job.name);
    const signal = this.#options.signal ?? new AbortController().signal;
    const clock = this.#options.clock ?? systemClock;
    const maxFreeWaitMs = this.#options.maxWaitWithoutAttemptMs ?? 900_000;
    const maxBackoffMs = this.#options.maxBackoffMs ?? 30_000;
    // A one-shot command waits at most the back-off cap after a 429 that named no wait.
    const waits = { rateLimitDelayMs: maxBackoffMs, ...this.#options.waits };
    let waitedMs = 0;
    for (;;) {
      try {
        // Validated again on dequeue, as the BullMQ worker does.
        const payload = definition.payload.parse(job.payload);
        const result = await this.#options.execute(definition, { ...job, payload }, signal);
        this.emit('completed', job, result);
        return;
      } catch (thrown) {
        const error = toError(thrown);
        let decision = jobRetryDecision(error, waits);
        if (decision.action === 'wait' && waitedMs + decision.delayMs > maxFreeWaitMs) {
          decision = { action: 'retry' };
        }
        const lastAttempt = job.attempt >= retryOptionsOf(definition).attempts;
        if (decision.action === 'fail' || (decision.action === 'retry' && lastAttempt) || signal.aborted) {
          this.#fail(job, error);
          return;
        }
        let delayMs: number;
        if (decision.action === 'wait') {
          delayMs = decision.delayMs;
          waitedMs += delayMs;
          this.emit('waiting', job, error, delayMs);
        } else {
          // BullMQ's `exponential` back-off (no jitter), capped for a one-shot command.
          delayMs = backoffDelay(job.attempt, {
            baseMs: retryOptionsOf(definition).backoff.delay,
            capMs: maxBackoffMs,
            jitter: 0,
          });
          this.emit('retrying', job, error, delayMs);
        }
        try {
          await clock.sleep(delayMs, signal);
        } catch {
          this.#fail(job, error);
          return;
        }
        if (decision.action === 'retry') job = { ...job, attempt: job.attempt + 1 };
      }
    }
  }

  #fail(job: InlineJob, error: Error): void {
    this.#failures.push({ job, error });
    this.emit('failed', job, error);
  }
}
