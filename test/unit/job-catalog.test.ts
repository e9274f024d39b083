/**
 * The catalog and its payload schemas name the same jobs, and enqueueing is typed by them: a wrong name
 * or payload is a compile error (checked by `tsc`, the `@ts-expect-error` lines below), still validated at
 * run time.
 */
import { describe, expect, it } from 'vitest';
import { jobCatalog } from '../../jobs/index.ts';
import { type JobPayloads, jobPayloads } from '../../jobs/payloads.ts';
import type { JobQueue } from '../../src/queue/job-queue.ts';

describe('job catalog', () => {
  it('has a payload schema for every job, and the job uses it', () => {
    expect(Object.keys(jobCatalog).sort()).toEqual(Object.keys(jobPayloads).sort());
    for (const [name, definition] of Object.entries(jobCatalog)) {
      expect(definition.payload).toBe(jobPayloads[name as keyof JobPayloads]);
    }
  });

  it('types enqueue by the catalog', () => {
    // Never called: the type checker is the assertion.
    const typed = (queue: JobQueue<JobPayloads>) => [
      queue.enqueue('users.sync', { orgId: 'o' }),
      queue.enqueue('records.backfill', { orgId: 'o', from: '2026-01-01', to: '2026-01-31' }),
      // @ts-expect-error: no such job
      queue.enqueue('users.synch', { orgId: 'o' }),
      // @ts-expect-error: users.sync takes an orgId
      queue.enqueue('users.sync', { org: 'o' }),
      // @ts-expect-error: legacy.sync's objects are legacy object names
      queue.enqueue('legacy.sync', { orgId: 'o', objects: ['steps'] }),
    ];
    expect(typeof typed).toBe('function');
  });
});
