/**
 * Set-up shared by the test files: a value made in beforeAll and disposed of in afterAll, handed out
 * at once as a stand-in that forwards to the value (so `const db = useTestDatabase()` replaces a `let`,
 * a beforeAll and an afterAll). Registered where it is called: at the top of a file or in a describe.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import { createTestRedis, type TestRedis } from './redis.ts';

export function useBeforeAll<T extends object>(
  create: () => Promise<T>,
  dispose: (value: T) => Promise<unknown> | unknown,
): T {
  let value: T | undefined;
  beforeAll(async () => {
    value = await create();
  });
  afterAll(async () => {
    if (value) await dispose(value);
  });
  const current = (): T => {
    if (!value) throw new Error('this fixture exists from beforeAll on: use it in tests and hooks only');
    return value;
  };
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(current(), key),
    has: (_, key) => Reflect.has(current(), key),
    ownKeys: () => Reflect.ownKeys(current()),
    getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(current(), key),
  });
}

/** A sandbox platform for the file (or describe), closed after it. */
export const useSandbox = (options: SandboxOptions = {}): Sandbox =>
  useBeforeAll(
    () => startSandbox(options),
    (sandbox) => sandbox.close(),
  );

/** A temporary folder for the file (or describe), removed after it; `dir.path` is its path. */
export function useTempDir(prefix: string) {
  const dir = useBeforeAll(
    async () => ({ path: await mkdtemp(join(tmpdir(), prefix)) }),
    ({ path }) => rm(path, { recursive: true, force: true }),
  );
  return {
    get path(): string {
      return dir.path;
    },
    /** Writes `config` as JSON into the folder and returns the file's path. */
    async writeJson(name: string, config: unknown): Promise<string> {
      const file = join(dir.path, name);
      await writeFile(file, JSON.stringify(config));
      return file;
    },
  };
}

/** A Redis key prefix of its own for the file (or describe), its keys deleted after it. */
export const useTestRedis = (name: string): TestRedis =>
  useBeforeAll(
    async () => createTestRedis(name),
    (redis) => redis.cleanup(),
  );
