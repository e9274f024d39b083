/**
 * The catalog is the folder: every job file of jobs/ is found, each adds its payload and result to the
 * catalog's types, and adding a job is adding its file (and its row of JOB_SCHEDULE, where every job's
 * priority and retry class stand side by side). Enqueueing is typed by the catalog: a wrong name
 * or payload is a compile error (checked by `tsc`, the `@ts-expect-error` lines below), still validated
 * at run time.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobCatalog, loadJobCatalog } from '../../jobs/index.ts';
import { JOB_SCHEDULE } from '../../jobs/job-schedule.ts';
import type { CatalogPayloads } from '../../src/queue/job-catalog.ts';
import type { JobQueue } from '../../src/queue/job-queue.ts';

const JOBS_DIR = path.resolve(import.meta.dirname, '../../jobs');
/** The folder's modules that are not jobs: the loader, and what every job is given. */
const NOT_JOBS = new Set(['index.ts', 'job-context.ts', 'job-schedule.ts']);
const jobFiles = readdirSync(JOBS_DIR).filter((name) => name.endsWith('.ts') && !NOT_JOBS.has(name));

describe('job catalog', () => {
  it('holds one job per file of jobs/, each declaring its own entry (payload schema and definition) in the catalog types', () => {
    const declared: string[] = [];
    for (const file of jobFiles) {
      const source = readFileSync(path.join(JOBS_DIR, file), 'utf8');
      const entry = /interface Jobs \{\s*'([a-z.]+)'/.exec(source)?.[1];
      const name = /defineJob\(\{\s*name: '([a-z.]+)'/.exec(source)?.[1];
      expect({ file, entry }).toEqual({ file, entry: name });
      declared.push(name!);
    }
    expect(Object.keys(jobCatalog).sort()).toEqual(declared.sort());
    for (const definition of Object.values(jobCatalog)) {
      expect(typeof definition.priority).toBe('number');
      expect(definition.payload).toBeDefined();
    }
  });

  describe('adding a job is its file and its row of JOB_SCHEDULE', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'validic-sync-jobs-'));
    const schedule = JOB_SCHEDULE as Record<string, { priority: number; retry: string }>;
    beforeAll(() => {
      schedule['hello.world'] = { priority: 50, retry: 'housekeeping' };
    });
    afterAll(() => {
      delete schedule['hello.world'];
      rmSync(dir, { recursive: true, force: true });
    });

    it('finds a new job file without a list to edit', async () => {
      const contextModule = path.resolve(import.meta.dirname, '../../jobs/job-context.ts');
      writeFileSync(
        path.join(dir, 'hello-world.ts'),
        [
          "import { z } from 'zod';",
          `import { defineJob } from ${JSON.stringify(contextModule)};`,
          'export const helloWorld = defineJob({',
          "  name: 'hello.world',",
          '  payload: z.object({ name: z.string() }),',
          "  run: async (_ctx, payload) => 'hello ' + payload.name,",
          '});',
        ].join('\n'),
      );
      const catalog = await loadJobCatalog(dir, '.ts');
      expect(Object.keys(catalog)).toEqual(['hello.world']);
      expect(await catalog['hello.world']!.run({} as never, { name: 'you' })).toBe('hello you');
      expect(catalog['hello.world']).toMatchObject({ priority: 50, retry: 'housekeeping' });
    });

    it('refuses a job without its row, naming the table', async () => {
      const other = mkdtempSync(path.join(tmpdir(), 'validic-sync-jobs-'));
      try {
        writeFileSync(
          path.join(other, 'unscheduled.ts'),
          readFileSync(path.join(dir, 'hello-world.ts'), 'utf8').replace(
            "'hello.world'",
            "'hello.unscheduled'",
          ),
        );
        await expect(loadJobCatalog(other, '.ts')).rejects.toThrow(
          /hello\.unscheduled has no row in JOB_SCHEDULE \(jobs\/job-schedule\.ts\)/,
        );
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    });

    it('refuses two files that name the same job', async () => {
      writeFileSync(path.join(dir, 'hello-again.ts'), readFileSync(path.join(dir, 'hello-world.ts'), 'utf8'));
      await expect(loadJobCatalog(dir, '.ts')).rejects.toThrow(/two jobs are named hello\.world/);
    });
  });

  it('types enqueue by the catalog', () => {
    // Never called: the type checker is the assertion.
    const typed = (queue: JobQueue<CatalogPayloads>) => [
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
