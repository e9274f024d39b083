/**
 * One process at a time per embedded warehouse folder: PGlite lets a second process open a folder in use,
 * and two writers corrupt it. The lock refuses a live other process by its pid, takes over a file left by
 * a dead one, and lets one process open the folder more than once.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UserFacingError } from '../../src/errors/index.ts';
import { lockEmbeddedWarehouse } from '../../src/warehouse/embedded-lock.ts';

describe('the embedded warehouse lock', () => {
  const dir = mkdtempSync(join(tmpdir(), 'validic-lock-'));
  const file = join(dir, 'validic-sync.pid');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is held while open, also by two opens of one process, and gone after the last', () => {
    const first = lockEmbeddedWarehouse(dir);
    const second = lockEmbeddedWarehouse(dir);
    expect(readFileSync(file, 'utf8').trim()).toBe(String(process.pid));
    first();
    expect(existsSync(file)).toBe(true);
    second();
    expect(existsSync(file)).toBe(false);
  });

  it('refuses a folder another live process holds, naming it', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      writeFileSync(file, `${other.pid}\n`);
      let refused: unknown;
      try {
        lockEmbeddedWarehouse(dir);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(UserFacingError);
      expect((refused as Error).message).toBe(
        `the embedded warehouse in ${dir} is open in another process (pid ${other.pid}), and two at once would corrupt it`,
      );
      expect((refused as UserFacingError).fix).toMatch(/PostgreSQL \(DATABASE_URL\)/);
    } finally {
      other.kill();
      await new Promise((resolve) => other.once('exit', resolve));
    }
    // That process is gone now: its file is taken over.
    const release = lockEmbeddedWarehouse(dir);
    expect(readFileSync(file, 'utf8').trim()).toBe(String(process.pid));
    release();
  });
});
