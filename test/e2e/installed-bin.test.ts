/**
 * The `validic-sync` bin as an installed package: `npm pack` builds it (the `prepare` script compiles to
 * dist/, since Node does not strip types under node_modules), a clean prefix installs the tarball, and
 * the installed command runs: its version, and `migrate` into an embedded warehouse.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/runtime/version.ts';
import { REPO_ROOT } from '../helpers/cli.ts';

describe('the installed bin', () => {
  const root = mkdtempSync(join(tmpdir(), 'validic-sync-bin-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('works from `npm install <tarball>` without a manual build', { timeout: 300_000 }, () => {
    const npm = (args: string[], cwd: string) =>
      execFileSync('npm', [...args, '--no-audit', '--no-fund'], {
        cwd,
        encoding: 'utf8',
        env: { ...process.env, npm_config_cache: join(root, 'npm-cache') },
      });
    npm(['pack', '--pack-destination', root], REPO_ROOT);
    const tarball = readdirSync(root).find((f) => f.endsWith('.tgz'))!;
    const prefix = join(root, 'prefix');
    npm(['install', '--prefix', prefix, join(root, tarball)], root);

    const bin = join(prefix, 'node_modules/.bin/validic-sync');
    const run = (args: string[]) =>
      spawnSync(bin, args, {
        cwd: root,
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: root, VALIDIC_DATA_DIR: join(root, 'data'), LOG_LEVEL: 'warn' },
        timeout: 120_000,
      });
    const version = run(['--version']);
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(VERSION);
    const migrate = run(['migrate']);
    expect(migrate.status, migrate.stderr + migrate.stdout).toBe(0);
    expect(readdirSync(join(root, 'data')).length).toBeGreaterThan(0);
  });
});
