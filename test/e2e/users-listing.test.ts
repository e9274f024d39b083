/**
 * The v2 users listing is the evidence that a user is gone, so a listing that ends early must remove no
 * one. Against the sandbox over HTTP, with users.sync's own code:
 * - a listing cut short while `meta.total` counts every user: the users read are loaded, nobody is
 *   removed, the users cursor stays, and the job fails (IncompleteListingError, retried by its runner);
 * - the same cut without `meta` (the pager cannot count): a listing that would remove most of the users
 *   at once removes nobody;
 * - a complete listing still removes the users gone from the platform, with or without `meta`.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usersSync } from '../../jobs/users-sync.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { IncompleteListingError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const USERS = 30;

describe('a users listing that ends early removes no one', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, users: USERS, days: 2 });
    db = await createTestDatabase();
    const env = sandboxEnv(sandbox, { DATABASE_URL: undefined });
    runtime = await openRuntime(loadConfig(env, {}), silentLogger, {
      warehouse: db.warehouse,
      useRedis: false,
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
  });

  /** One run of users.sync, as a runner would run it (no retries: the test looks at one attempt). */
  const syncOnce = () =>
    usersSync.run(
      runtime.jobContext({
        jobId: 'users.sync|test',
        attempt: 1,
        signal: new AbortController().signal,
        enqueue: async () => false,
      }),
      { orgId: sandbox.orgId },
    );

  async function stored() {
    const rows = await sql<{ uid: string; removed: boolean }>`
      select uid, removed_at is not null as removed from validic.users order by uid`.execute(db.warehouse.db);
    return {
      all: rows.rows.length,
      removed: rows.rows.filter((r) => r.removed).map((r) => r.uid),
    };
  }
  const cursorAt = async () =>
    (
      await sql<{ at: string }>`
        select value->>'at' as at from validic_sync.checkpoints where key like 'users:%'`.execute(
        db.warehouse.db,
      )
    ).rows[0]?.at;

  it('keeps every user when the listing is cut short, says so, and removes the gone ones once it is whole', async () => {
    const first = await syncOnce();
    expect(first.users).toBe(USERS);
    expect(await stored()).toEqual({ all: USERS, removed: [] });
    const completedAt = await cursorAt();
    expect(completedAt).toBeDefined();

    // Cut short with meta.total: the pager throws after handing over the users it read.
    sandbox.control.setFaults({ usersListingCutShort: 10 }, { reset: true });
    const cut = await syncOnce().catch((error: unknown) => error);
    expect(cut).toBeInstanceOf(IncompleteListingError);
    expect((cut as Error).message).toMatch(/GET \/users: read 10 of 30/);
    expect(await stored()).toEqual({ all: USERS, removed: [] });
    expect(await cursorAt()).toBe(completedAt);

    // Cut short without meta: nothing to count against, but 20 of 30 gone at once is not believed.
    sandbox.control.setFaults({ usersListingCutShort: 10, usersListingWithoutMeta: true }, { reset: true });
    const uncounted = await syncOnce();
    expect(uncounted.users).toBe(10);
    expect(uncounted.removed).toEqual([]);
    expect(await stored()).toEqual({ all: USERS, removed: [] });

    // Whole listings, without and with meta: users deleted on the platform are removed.
    const [goneA, goneB] = sandbox.truth.users().map((u) => u.uid);
    sandbox.control.deleteUser(goneA!);
    sandbox.control.setFaults({ usersListingWithoutMeta: true }, { reset: true });
    expect((await syncOnce()).removed).toEqual([goneA]);
    sandbox.control.deleteUser(goneB!);
    sandbox.control.resetFaults();
    expect((await syncOnce()).removed).toEqual([goneB]);
    expect((await stored()).removed).toEqual([goneA, goneB].sort());
    expect(await cursorAt()).not.toBe(completedAt);
    // The uids each listing showed were kept page by page in validic_sync.users_listings and are gone
    // once it ended, complete or not.
    const leftover = await sql<{ n: number }>`
      select count(*)::int as n from validic_sync.users_listings`.execute(db.warehouse.db);
    expect(leftover.rows[0]!.n).toBe(0);
  });
});
