/**
 * Listings that move under the pager (the sandbox's `listingChurn`): between the pages of a legacy
 * `latest` listing, records of its window are updated (leaving the window) or deleted and records are
 * added; between the pages of the v2 users listing, users are deleted and added. Over 20 seeds, with
 * legacy.sync's and users.sync's own code against the sandbox over HTTP:
 *
 * - after the churned sync, every record the platform holds with a `last_updated` at or before the
 *   object's cursor is stored with that `last_updated`: the cursor never passed a record it did not read
 *   (the old pager ended such a listing "complete" with one record never served, and moved the cursor);
 * - after one more scheduled sync (from the cursor), the warehouse equals the platform's legacy records;
 * - after users.sync, every user the platform has is stored and not marked removed.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usersSync } from '../../jobs/users-sync.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime } from '../../src/worker/runtime.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const SEEDS = Array.from({ length: 20 }, (_, i) => 100 + i);
const OBJECTS = ['fitness', 'routine', 'weight'] as const;
const DAY_MS = 86_400_000;

describe('listings that change while they are paged', () => {
  const databases: TestDatabase[] = [];
  let sandbox: Sandbox | undefined;
  beforeAll(() => undefined);
  afterAll(async () => {
    await sandbox?.close();
    for (const db of databases) await db.drop();
  });

  it.each(SEEDS)(
    'seed %i: no legacy record or user missed, the cursor never past an unread record',
    async (seed) => {
      await sandbox?.close();
      sandbox = await startSandbox({ seed, users: 12, days: 3 });
      const db = await createTestDatabase();
      databases.push(db);
      const env = sandboxEnv(sandbox, { DATABASE_URL: undefined });
      const runtime = await openRuntime(loadConfig(env, {}), silentLogger, {
        warehouse: db.warehouse,
        useRedis: false,
      });
      try {
        sandbox.control.setFaults(
          { latestLimitCap: 5, usersLimitCap: 4, listingChurn: { legacy: 2, users: 1, pages: 12 } },
          { reset: true },
        );
        const runner = createInlineRunner(runtime, new AbortController().signal, 1);
        const failed: string[] = [];
        runner.on('failed', (job, error) => failed.push(`${job.name}: ${error.message}`));
        const from = new Date(Date.parse(sandbox.control.now()) - 4 * DAY_MS).toISOString();
        await runner.enqueue('legacy.sync', { orgId: sandbox.orgId, objects: [...OBJECTS], from });
        await runner.drain();
        // The listings did change between pages: records were updated by the churn.
        expect(sandbox.truth.legacyRecords().some((r) => (r.extras as { churned?: boolean }).churned)).toBe(
          true,
        );

        // The cursor of each object never lies past a record the platform holds and the warehouse lacks.
        const churnedAt = Date.parse(sandbox.control.now());
        const behindCursors = async () => {
          const cursors = await sql<{ key: string; value: { end: string } }>`
          select key, value from validic_sync.checkpoints where key like 'legacy:latest:%'`.execute(
            db.warehouse.db,
          );
          const stored = await sql<{ object: string; id: string; last_updated: Date }>`
          select object, id, last_updated from validic.legacy_records`.execute(db.warehouse.db);
          const storedAt = new Map(stored.rows.map((r) => [`${r.object}/${r.id}`, r.last_updated.getTime()]));
          const wrong: string[] = [];
          let covered = 0;
          const ends = new Map<string, number>();
          for (const row of cursors.rows) {
            const object = row.key.slice('legacy:latest:'.length);
            const end = Date.parse(row.value.end);
            ends.set(object, end);
            for (const record of sandbox!.truth.legacyRecords(object as (typeof OBJECTS)[number])) {
              if (Date.parse(record.last_updated) > end) continue;
              covered++;
              if (storedAt.get(`${object}/${record._id}`) !== Date.parse(record.last_updated))
                wrong.push(`${object}/${record._id} (${record.last_updated})`);
            }
          }
          return { wrong, covered, ends };
        };
        const first = await behindCursors();
        expect(first.wrong).toEqual([]);
        expect(first.covered).toBeGreaterThan(20);
        expect(failed).toEqual([]);

        // The next scheduled sync (from the cursors) reads what changed meanwhile: every record the platform
        // holds up to its now (the sandbox generates some late syncs stamped ahead of its clock: those wait).
        // Windows end at the platform's last whole second before they are asked, as early as the platform
        // clock's uncertainty (up to a second, more under load) can make it: let the churn's seconds pass.
        await waitForStep(
          'the platform clock four seconds past the churn',
          () => expect(Date.parse(sandbox!.control.now())).toBeGreaterThan(churnedAt + 4000),
          { timeout: 10_000, interval: 50 },
        );
        await runner.enqueue('legacy.sync', { orgId: sandbox.orgId, objects: [...OBJECTS] });
        await runner.drain();
        const second = await behindCursors();
        expect(second.wrong).toEqual([]);
        for (const object of OBJECTS) expect(second.ends.get(object)).toBeGreaterThan(churnedAt);
        expect(failed).toEqual([]);

        // Users: the listing changes between its pages (4 users a page).
        sandbox.control.setFaults(
          { usersLimitCap: 4, listingChurn: { legacy: 0, users: 1, pages: 3 } },
          { reset: true },
        );
        const before = sandbox.truth.users().length;
        const result = await usersSync.run(
          runtime.jobContext({
            jobId: 'users.sync|churn',
            attempt: 1,
            signal: new AbortController().signal,
            enqueue: async () => false,
          }),
          { orgId: sandbox.orgId },
        );
        expect(result.incomplete).toBeUndefined();
        // Users were added while it paged (and as many deleted).
        expect(sandbox.truth.users().filter((u) => u.uid.startsWith('uid-')).length).toBeGreaterThan(0);
        expect(sandbox.truth.users().length).toBe(before);
        const users = await sql<{ uid: string; removed: boolean }>`
        select uid, removed_at is not null as removed from validic.users`.execute(db.warehouse.db);
        const live = new Set(users.rows.filter((u) => !u.removed).map((u) => u.uid));
        const missingUsers = sandbox.truth
          .users()
          .filter((u) => !live.has(u.uid))
          .map((u) => u.uid);
        expect(missingUsers).toEqual([]);
      } finally {
        await runtime.close();
      }
    },
  );
});
