/** 0008 on a warehouse that already holds data: users' secrets redacted in place; down and up again. */
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { FolderMigrationProvider, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { createEmptyDatabase, migrationsBefore } from '../helpers/pg.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

/** The migrations before 0008 only: the warehouse as it was before it. */
const before = migrationsBefore('0008');

const t = useTestDatabase(createEmptyDatabase);

describe('migration 0008', () => {
  it('redacts stored users tokens in place, keeps everything else, and goes down and up again', async () => {
    const db = t.warehouse.db;
    await migrateToLatest(db, before);
    const user = (uid: string, extra: Record<string, unknown>) => ({
      uid,
      raw: JSON.stringify({ uid, location: { timezone: 'UTC' }, ...extra }),
      url: (extra.marketplace as { url?: string } | undefined)?.url ?? null,
    });
    const users = [
      user('u1', {
        marketplace: { token: 'mkt0a1b2c3', url: 'https://market.example/marketplace/mkt0a1b2c3' },
        mobile: { token: 'mob9f8e7d6' },
      }),
      user('u2', { mobile: { token: 'mob-only-1' } }),
      user('u3', { marketplace: { token: 'mkt-no-url' } }),
      user('u4', {}),
    ];
    for (const u of users) {
      await sql`insert into validic.users (org_id, uid, raw, marketplace_url)
        values ('o', ${u.uid}, ${u.raw}::jsonb, ${u.url})`.execute(db);
    }
    await sql`insert into validic_sync.quarantine (org_id, arrived_via, kind, reason, raw, raw_sha256)
      values ('o', 'poll', 'user', 'invalid user', '{"uid":"","mobile":{"token": "mob-q-123"}}', 'x')`.execute(
      db,
    );

    expect(await migrateToLatest(db)).toContain('0008_data_fidelity');

    const { rows } = await sql<{ uid: string; raw: Record<string, unknown>; marketplace_url: string | null }>`
      select uid, raw, marketplace_url from validic.users order by uid`.execute(db);
    expect(rows).toEqual([
      {
        uid: 'u1',
        raw: {
          uid: 'u1',
          location: { timezone: 'UTC' },
          marketplace: { token: '[REDACTED]', url: 'https://market.example/marketplace/[REDACTED]' },
          mobile: { token: '[REDACTED]' },
        },
        marketplace_url: 'https://market.example/marketplace/[REDACTED]',
      },
      {
        uid: 'u2',
        raw: { uid: 'u2', location: { timezone: 'UTC' }, mobile: { token: '[REDACTED]' } },
        marketplace_url: null,
      },
      {
        uid: 'u3',
        raw: { uid: 'u3', location: { timezone: 'UTC' }, marketplace: { token: '[REDACTED]' } },
        marketplace_url: null,
      },
      { uid: 'u4', raw: { uid: 'u4', location: { timezone: 'UTC' } }, marketplace_url: null },
    ]);
    const q = await sql<{ raw: string }>`select raw from validic_sync.quarantine`.execute(db);
    expect(q.rows[0]!.raw).toBe('{"uid":"","mobile":{"token":"[REDACTED]"}}');

    const hasBadPoints = async () =>
      (
        await sql<{ n: number }>`select count(*)::int as n from information_schema.columns
          where table_schema = 'validic' and table_name = 'intraday_series' and column_name = 'bad_points'`.execute(
          db,
        )
      ).rows[0]!.n;
    expect(await hasBadPoints()).toBe(1);
    const previous = Object.keys(await before.getMigrations())
      .sort()
      .at(-1)!;
    const down = await new Migrator({ db, provider: new FolderMigrationProvider() }).migrateTo(previous);
    expect(down.error).toBeUndefined();
    expect(await hasBadPoints()).toBe(0);
    expect(await migrateToLatest(db)).toContain('0008_data_fidelity');
    expect(await hasBadPoints()).toBe(1);
  });
});
