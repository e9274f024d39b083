/** A BullMQ worker for tests: two jobs at a time, 5 s locks, silent, the rest given by the test. */
import { silentLogger } from '../../src/log/logger.ts';
import { type QueueWorker, type QueueWorkerOptions, startQueueWorker } from '../../src/queue/queue-worker.ts';

type Required = 'runtime' | 'redis' | 'prefix' | 'catalog' | 'jobQueue' | 'signal';

export function startTestQueueWorker(
  options: Pick<QueueWorkerOptions, Required> & Partial<Omit<QueueWorkerOptions, Required>>,
): QueueWorker {
  return startQueueWorker({
    concurrency: 2,
    lockDurationMs: 5000,
    maxStalledCount: 1,
    log: silentLogger,
    ...options,
  });
}
