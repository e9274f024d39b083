/**
 * A newcomer's first minutes: clone the repository into a temporary folder and run the README's first
 * command exactly as written there: `npm ci` and the demo, without DATABASE_URL or REDIS_URL. The
 * README's second command, the tests, is not run again in the clone (that doubled CI's time and load):
 * CI is itself a clean clone that installs with `npm ci` and runs `npm test`, so this test checks that
 * the README's test command is the one `.ci/run` runs. Then the README's one local command,
 * `npm run dev`, in the same clone (after its `npm ci`): with the embedded warehouse and the machine's
 * Redis, its line of status shows the stream live with a lag under 10 s, and bull-board lists the jobs.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.ts';
import { createTestRedis } from '../helpers/redis.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
/** The fenced block under "## Two commands": one command per line, comments after `#`. */
const commands = /## Two commands\s+```sh\n([\s\S]*?)```/
  .exec(readme)![1]!
  .split('\n')
  .map((line) => line.replace(/\s+#.*$/, '').trim())
  .filter(Boolean);

function sh(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * The machine's environment (certificates, proxies and the like stay: npm needs them) without what
 * this test run or a configured user would add: no database, no Redis, no Validic settings, and
 * nothing of the npm and vitest processes running this test.
 */
function newcomerEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(DATABASE_URL|REDIS_URL|VALIDIC_|npm_|VITEST|TEST|NODE_ENV$|NODE_OPTIONS$|INIT_CWD$)/i.test(name))
      continue;
    env[name] = value;
  }
  // The Node and tools of this checkout are not the newcomer's: only the machine's own PATH entries.
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  return env;
}

/** The fenced block under "## Run it locally", alike. */
const localCommands = /## Run it locally\s+```sh\n([\s\S]*?)```/
  .exec(readme)![1]!
  .split('\n')
  .map((line) => line.replace(/\s+#.*$/, '').trim())
  .filter(Boolean);

describe('a fresh clone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'validic-sync-clone-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names the test command CI runs', () => {
    expect(commands).toEqual(['npm ci && npm run demo', 'npm test']);
    const ci = readFileSync(join(REPO_ROOT, '.ci/run'), 'utf8');
    expect(ci.split('\n').map((line) => line.trim())).toContain(commands[1]);
    expect(JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts.test).toBe('vitest run');
  });

  it('runs the README first command as written: npm ci, then the demo', { timeout: 600_000 }, async () => {
    execFileSync('git', ['clone', '--quiet', REPO_ROOT, dir]);
    const env = newcomerEnvironment();

    const demo = await sh(commands[0]!, dir, env);
    expect(demo.code, demo.output.slice(-3000)).toBe(0);
    expect(demo.output).toMatch(/What landed in the warehouse/);
    expect(demo.output).toMatch(/Analyst query: Daily steps per user/);
    expect(demo.output).toMatch(/Done in/);
  });

  it('runs the README local command as written: npm run dev', { timeout: 300_000 }, async () => {
    expect(localCommands).toEqual(['npm ci', 'npm run dev']);
    expect(existsSync(join(dir, 'node_modules')), 'the clone is installed by the test before').toBe(true);
    // The newcomer's environment; the port and the Redis prefix keep this run apart on a shared machine.
    const redis = createTestRedis('fresh-clone-dev');
    const env = { ...newcomerEnvironment(), HTTP_PORT: '0', VALIDIC_REDIS_PREFIX: redis.prefix.slice(0, -1) };
    const [command, ...args] = localCommands[1]!.split(' ');
    const child = spawn(command!, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    for (const stream of [child.stdout, child.stderr])
      stream.on('data', (d: Buffer) => {
        output += d.toString('utf8');
      });
    const ended = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const live = await waitForStep(
        'npm run dev to show the stream live with a lag under 10 s',
        () => {
          const lines = [
            ...output.matchAll(/dev \d\d:\d\d:\d\d: stream live \(heard \d+ s ago\), lag (\d+) s/g),
          ];
          const line = lines.find((m) => Number(m[1]) < 10);
          if (!line) throw new Error(`not yet: ${output.slice(-1500)}`);
          return line[0];
        },
        { timeout: 240_000, interval: 500 },
      );
      expect(live).toMatch(/stream live/);
      const admin = /worker listening on (\S+)/.exec(output)![1]!;
      const api = (await (
        await fetch(`${admin}/queues/api/queues?activeQueue=jobs&status=completed&page=1`)
      ).json()) as {
        queues: { name: string; jobs: { name: string }[] }[];
      };
      expect(api.queues[0]!.jobs.map((j) => j.name)).toContain('users.sync');
    } finally {
      // npm, and the worker under it: the whole group gets the Ctrl-C.
      process.kill(-child.pid!, 'SIGINT');
      await ended;
      await redis.cleanup();
    }
    expect(output).toMatch(/worker stopped/);
  });
});
