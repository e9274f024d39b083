/**
 * The sandbox in a worker thread (see sandbox-worker.ts): its connection details, and a few control calls
 * over messages (stats, faults, clock, close).
 */
import { Worker } from 'node:worker_threads';
import type { SandboxConnection } from '../../src/sandbox/connection-details.ts';
import type { Faults, SandboxOptions } from '../../src/sandbox/index.ts';

export type SandboxRequest =
  | { op: 'stats' }
  | { op: 'resetStats' }
  | { op: 'setFaults'; faults: Partial<Faults> }
  | { op: 'now' }
  | { op: 'recordCount' }
  | { op: 'close' };

/** The sandbox's connection details (connectionDetails), its users and its record count. */
export interface SandboxInfo extends SandboxConnection {
  uids: string[];
  /** Current v2 records in the truth. */
  records: number;
}

export interface SandboxStats {
  total: number;
  rateLimited: number;
  byEndpoint: Record<string, Record<string, number>>;
  perTokenMinute: Record<string, Record<string, number>>;
}

export interface SandboxThread {
  info: SandboxInfo;
  stats(): Promise<SandboxStats>;
  resetStats(): Promise<void>;
  /** The sandbox clock, ms since the epoch. */
  now(): Promise<number>;
  close(): Promise<void>;
}

export async function startSandboxThread(
  options: SandboxOptions,
  resourceLimits?: { maxOldGenerationSizeMb?: number },
): Promise<SandboxThread> {
  const worker = new Worker(new URL('./sandbox-worker.ts', import.meta.url), {
    workerData: options,
    ...(resourceLimits ? { resourceLimits } : {}),
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const info = await new Promise<SandboxInfo>((resolve, reject) => {
    worker.once('error', reject);
    worker.on(
      'message',
      (message: { ready?: SandboxInfo; id?: number; result?: unknown; error?: string }) => {
        if (message.ready) {
          resolve(message.ready);
          return;
        }
        const waiter = message.id === undefined ? undefined : pending.get(message.id);
        if (!waiter || message.id === undefined) return;
        pending.delete(message.id);
        if (message.error) waiter.reject(new Error(message.error));
        else waiter.resolve(message.result);
      },
    );
  });
  const call = <T>(request: SandboxRequest): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, request });
    });
  return {
    info,
    stats: () => call<SandboxStats>({ op: 'stats' }),
    resetStats: () => call<void>({ op: 'resetStats' }),
    now: async () => Date.parse(await call<string>({ op: 'now' })),
    async close() {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      await call({ op: 'close' });
      await exited;
    },
  };
}
