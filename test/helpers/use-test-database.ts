/**
 * The database set-up every PostgreSQL test file shares: `const t = useTestDatabase()` creates a fresh
 * database before the file's tests and drops it after them. (Apart from pg.ts, which the benchmarks
 * import outside vitest.)
 */
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, type TestDatabase } from './pg.ts';

export function useTestDatabase(create: () => Promise<TestDatabase> = createTestDatabase): TestDatabase {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    db = await create();
  });
  afterAll(async () => {
    await db?.drop();
  });
  const current = (): TestDatabase => {
    if (!db) throw new Error('the test database exists from beforeAll on: use it in tests and hooks only');
    return db;
  };
  return {
    get url() {
      return current().url;
    },
    get name() {
      return current().name;
    },
    get warehouse() {
      return current().warehouse;
    },
    drop: () => current().drop(),
  };
}
