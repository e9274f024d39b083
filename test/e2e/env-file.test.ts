/** A `.env` file in the working folder configures the CLI; the environment wins over it. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_MAIN } from '../helpers/cli.ts';

describe('.env', () => {
  const dir = mkdtempSync(join(tmpdir(), 'validic-sync-env-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const migrate = (env: NodeJS.ProcessEnv) =>
    spawnSync(process.execPath, [CLI_MAIN, 'migrate'], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: dir, LOG_LEVEL: 'warn', ...env },
      timeout: 120_000,
    });

  it('is read from the working folder, and says nothing when absent', { timeout: 180_000 }, () => {
    const without = migrate({ VALIDIC_DATA_DIR: join(dir, 'no-env-file') });
    expect(without.status, without.stderr).toBe(0);
    expect(without.stderr).not.toMatch(/\.env/);

    writeFileSync(join(dir, '.env'), `# local settings\nVALIDIC_DATA_DIR=${join(dir, 'from-file')}\n`);
    const fromFile = migrate({});
    expect(fromFile.status, fromFile.stderr).toBe(0);
    expect(existsSync(join(dir, 'from-file'))).toBe(true);

    const fromEnv = migrate({ VALIDIC_DATA_DIR: join(dir, 'from-env') });
    expect(fromEnv.status, fromEnv.stderr).toBe(0);
    expect(existsSync(join(dir, 'from-env'))).toBe(true);
  });
});
