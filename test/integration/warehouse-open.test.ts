import { createServer } from 'node:net';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { UserFacingError } from '../../src/errors/index.ts';
import { openWarehouse } from '../../src/warehouse/open-warehouse.ts';
import { ADMIN_URL } from '../helpers/pg.ts';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('openWarehouse', () => {
  it('an unreachable database is a UserFacingError naming the fix, without the password', async () => {
    const port = await closedPort();
    const error = await openWarehouse({ databaseUrl: `postgres://me:hunter2@127.0.0.1:${port}/nope` }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UserFacingError);
    const e = error as UserFacingError;
    expect(e.message).toContain(`127.0.0.1:${port}`);
    expect(e.message).not.toContain('hunter2');
    expect(e.fix).toMatch(/DATABASE_URL/);
    expect(e.fix).toMatch(/PostgreSQL is running/);
  });

  it('a database that does not exist is a UserFacingError too', async () => {
    const url = new URL(ADMIN_URL);
    url.pathname = '/validic_sync_no_such_database';
    const error = await openWarehouse({ databaseUrl: url.href }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFacingError);
  });

  it('parses int8 and numeric as numbers, dates as YYYY-MM-DD, timestamptz as Date', async () => {
    const wh = await openWarehouse({ databaseUrl: ADMIN_URL, maxConnections: 1 });
    try {
      const { rows } = await sql<{ a: unknown; b: unknown; c: unknown; d: unknown }>`
        select 42::int8 as a, 1.25::numeric as b, '2024-02-29'::date as c, '2024-02-29T10:00:00Z'::timestamptz as d`.execute(
        wh.db,
      );
      expect(rows[0]).toEqual({ a: 42, b: 1.25, c: '2024-02-29', d: new Date('2024-02-29T10:00:00Z') });
    } finally {
      await wh.close();
    }
  });
});
