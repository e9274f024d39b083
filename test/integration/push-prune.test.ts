/**
 * push.prune: stored push bodies older than push.retentionDays go, newer ones stay; deletion runs in
 * batches until nothing old is left. Real PostgreSQL.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobContext } from '../../jobs/job-context.ts';
import { jobSettings, jobWarehouse } from '../../jobs/job-context.ts';
import { pushPrune } from '../../jobs/push-prune.ts';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { prunePushNotifications } from '../../src/warehouse/push-notification-store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const DAY = 86_400_000;

describe('push.prune', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const insert = async (ageDays: number[]) => {
    for (const age of ageDays) {
      await sql`insert into validic_sync.push_notifications (received_at, raw, status)
        values (${new Date(Date.now() - age * DAY)}, ${`{"age":${age}}`}, 'queued')`.execute(db.warehouse.db);
    }
  };
  const ages = async () =>
    (
      await sql<{ raw: string }>`select raw from validic_sync.push_notifications order by id`.execute(
        db.warehouse.db,
      )
    ).rows.map((r) => (JSON.parse(r.raw) as { age: number }).age);

  it('deletes bodies older than the retention, in batches, and keeps the rest', async () => {
    await insert([45, 31, 40, 29, 1, 33]);
    expect(
      await prunePushNotifications(db.warehouse.db, new Date(Date.now() - 30 * DAY), { batchSize: 2 }),
    ).toBe(4);
    expect(await ages()).toEqual([29, 1]);
  });

  it('as a job, reads the retention from config (default 30 days)', async () => {
    await sql`truncate validic_sync.push_notifications`.execute(db.warehouse.db);
    await insert([31, 2]);
    const config = configSchema.parse({});
    const settings = jobSettings(config);
    const ctx = {
      warehouse: jobWarehouse(db.warehouse),
      settings,
      log: silentLogger,
      signal: new AbortController().signal,
    } as unknown as JobContext;
    expect(await pushPrune.run(ctx, {})).toMatchObject({ deleted: 1 });
    expect(await ages()).toEqual([2]);
    expect(
      await pushPrune.run({ ...ctx, settings: { ...settings, pushRetentionDays: 1 } }, {}),
    ).toMatchObject({ deleted: 1 });
    expect(await ages()).toEqual([]);
  });
});
