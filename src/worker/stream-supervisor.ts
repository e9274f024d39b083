/**
 * Keeps every configured org stream running in this worker process for as long as the process runs.
 * Streams are not queue jobs: a job holding a connection for hours would pin a worker slot and fight
 * BullMQ's lock renewal. Instead each process runs `runOrgStream` per org, whose connections each take a
 * fleet-wide Redis slot first (stream-slots.ts): at most `stream.connections` (≤ 3) connections per
 * stream across the fleet, and when a process dies its slot lapses and a waiting process takes over.
 * A stream that stops with an error is restarted after a back-off (capped at a minute).
 */

import type { Logger } from '../log/logger.ts';
import type { WorkerMetrics } from '../metrics/worker-metrics.ts';
import type { CatalogPayloads } from '../queue/job-catalog.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { consumerOptionsFromConfig } from '../stream/consumer-options.ts';
import { runOrgStream } from '../stream/run-org-stream.ts';
import { abortableSleep } from '../time/clock.ts';
import type { Runtime } from './runtime.ts';
import type { StreamSlots } from './stream-slots.ts';

export interface StreamSupervisorOptions {
  runtime: Pick<Runtime, 'config' | 'warehouse' | 'org'>;
  slots: StreamSlots;
  jobQueue: Pick<JobQueue<CatalogPayloads>, 'enqueue'>;
  signal: AbortSignal;
  metrics?: WorkerMetrics;
  log: Logger;
}

export interface StreamSupervisor {
  /** Resolves once every org stream stopped (after `signal` aborted). */
  done: Promise<void>;
  /** Connection states by org and slot (`w<i>`: connection i waiting for a slot), for metrics. */
  states(): Record<string, Record<string, string>>;
}

export function superviseStreams(options: StreamSupervisorOptions): StreamSupervisor {
  const { runtime, signal, log } = options;
  const states: Record<string, Record<string, string>> = {};

  const superviseOrg = async (orgId: string): Promise<void> => {
    const org = runtime.org(orgId);
    const name = org.config.stream.name;
    const max = org.config.stream.connections;
    const orgStates: Record<string, string> = {};
    states[orgId] = orgStates;
    let failures = 0;
    while (!signal.aborted) {
      try {
        await runOrgStream({
          warehouse: runtime.warehouse,
          org,
          signal,
          consumerOptions: consumerOptionsFromConfig(runtime.config.stream),
          acquireSlot: async (index, slotSignal) => {
            orgStates[`w${index}`] = 'waiting_slot';
            const lease = await options.slots.acquire(orgId, name, max, slotSignal).finally(() => {
              delete orgStates[`w${index}`];
            });
            log.info({ orgId, slot: lease.slot }, 'holding a stream slot');
            return {
              slot: lease.slot,
              lost: lease.signal,
              release: async () => {
                delete orgStates[lease.slot];
                await lease.release();
              },
            };
          },
          enqueue: (jobName, payload) => options.jobQueue.enqueue(jobName, payload),
          // A gap brings the next reconciliation pass forward; the delay lets the primary catch up first.
          requestPass: () => {
            void options.jobQueue
              .enqueue(
                'streams.reconcile',
                { orgId, trigger: 'gap' },
                { delayMs: runtime.config.stream.passAfterGapSeconds * 1000 },
              )
              .catch((error: unknown) =>
                log.warn({ err: error, orgId }, 'could not queue a reconciliation pass'),
              );
          },
          hooks: {
            onStateChange: ({ slot, to }) => {
              orgStates[slot] = to;
            },
            onCommit: ({ result, committedAt, via }) => {
              options.metrics?.recordLoad(result.byType, result.newestCreatedAt, via, committedAt);
              options.metrics?.recordSuccess(orgId, 'stream', committedAt);
            },
          },
          log,
        });
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        failures++;
        const delayMs = Math.min(60_000, 1000 * 2 ** Math.min(failures, 6));
        log.error({ err: error, orgId, delayMs }, 'stream stopped; restarting after a pause');
        await abortableSleep(delayMs, signal).catch(() => {});
      }
    }
  };

  const done = Promise.all(
    runtime.config.organizations.map((org) =>
      superviseOrg(org.orgId).catch((error: unknown) =>
        log.error({ err: error }, 'stream supervisor failed'),
      ),
    ),
  ).then(() => undefined);
  return { done, states: () => structuredClone(states) };
}
