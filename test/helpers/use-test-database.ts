/**
 * The database set-up every PostgreSQL test file shares: `const t = useTestDatabase()` creates a fresh
 * database before the file's (or describe's) tests and drops it after them. (Apart from pg.ts, which the
 * benchmarks import outside vitest.)
 */
import { createTestDatabase, type TestDatabase } from './pg.ts';
import { useBeforeAll } from './use-before-all.ts';

export const useTestDatabase = (create: () => Promise<TestDatabase> = createTestDatabase): TestDatabase =>
  useBeforeAll(create, (db) => db.drop());
