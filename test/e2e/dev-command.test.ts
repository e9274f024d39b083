/**
 * The one local command, `npm run dev` (`worker --sandbox`), with PostgreSQL and Redis from the
 * environment: it prints the warehouse it writes and bull-board's address, writes the sandbox's settings
 * for other commands, and then `status`, run beside it with those settings, shows the stream live (heard
 * within the pokes' rhythm) with a lag under 10 s, while bull-board lists the jobs. Also `sandbox --env`
 * and `--write-env`, the settings as a shell reads them. Without Redis anywhere, one message says so.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDev } from '../../src/demo/run-dev.ts';
import { ConfigError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { SyncStatus } from '../../src/metrics/sync-status.ts';
import { CLI_MAIN, type CliResult, resultWithin, runCli, spawnCli } from '../helpers/cli.ts';
import { TEST_REDIS_URL } from '../helpers/redis.ts';
import { useTempDir, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

/** The value, or a throw that keeps waitForStep waiting (with what was seen). */
function ready<T>(value: T | undefined | null | false, seen: () => string): T {
  if (value === undefined || value === null || value === false) throw new Error(`not yet: ${seen()}`);
  return value;
}

/** A dotenv file as the CLI's .env reader and sh read it: KEY='value' lines. */
function readEnvFile(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => /^([A-Z_]+)='(.*)'$/.exec(line)!)
      .map((m) => [m[1]!, m[2]!]),
  );
}

describe('npm run dev', () => {
  const db = useTestDatabase();
  const redis = useTestRedis('dev');
  const cwd = useTempDir('validic-dev-');

  it('runs the worker against a live sandbox: status shows the stream live, bull-board the jobs', {
    timeout: 240_000,
  }, async () => {
    const child = spawn(process.execPath, [CLI_MAIN, 'worker', '--sandbox'], {
      cwd: cwd.path,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: db.url,
        REDIS_URL: TEST_REDIS_URL,
        VALIDIC_REDIS_PREFIX: redis.prefix.slice(0, -1),
        HTTP_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<CliResult>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
    );
    try {
      const admin = await waitForStep(
        'the dev worker to listen',
        () => ready(/worker listening on (\S+)/.exec(stdout)?.[1], () => stderr.slice(-2000)),
        { timeout: 120_000, interval: 200 },
      );
      expect(stdout).toMatch(
        /warehouse {2}PostgreSQL database \S+ on 127\.0\.0\.1:5432 as postgres \(DATABASE_URL\)/,
      );
      expect(stdout).toContain(`jobs       ${admin}/queues (bull-board)`);
      const settings = readEnvFile(join(cwd.path, '.data', 'dev.env'));
      expect(settings).toMatchObject({
        VALIDIC_ORG_ID: 'sandbox-org',
        VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true',
        VALIDIC_REQUESTS_PER_HOUR: '1000000',
        VALIDIC_REDIS_PREFIX: redis.prefix.slice(0, -1),
      });
      expect(settings.DATABASE_URL).toBeUndefined();

      // `status` beside it, with the settings it wrote and the database it was given.
      const env = { PATH: process.env.PATH, ...settings, DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL };
      const org = await waitForStep(
        'status to show the stream live with a lag under 10 s',
        async () => {
          const result = await runCli(['status', '--json'], env);
          const found = ready(result.code === 0, () => result.stderr)
            ? (JSON.parse(result.stdout) as SyncStatus).orgs.find((o) => o.orgId === 'sandbox-org')
            : undefined;
          const heard = found?.budget?.recentPoll.streamLastHeardSeconds;
          const lag = found?.records.lagSeconds;
          return ready(
            heard != null && heard < 15 && lag != null && lag < 10 && found,
            () => `heard ${heard} s ago, lag ${lag} s`,
          );
        },
        { timeout: 120_000, interval: 1000 },
      );
      expect(org.stream.slots).toEqual({ 0: expect.any(String) });
      const table = await runCli(['status'], env);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/connections: 1 \(slot 0 held by /);
      expect(table.stdout).toMatch(/stream last heard \d+ s ago/);

      const completed = (await (
        await fetch(`${admin}/queues/api/queues?activeQueue=jobs&status=completed&page=1`)
      ).json()) as {
        queues: { name: string; jobs: { name: string }[] }[];
      };
      const names = completed.queues.find((q) => q.name === 'jobs')!.jobs.map((j) => j.name);
      expect(names).toContain('users.sync');
      // Its own line of status, every 15 s.
      await waitForStep(
        'the dev line of status',
        () =>
          ready(/dev \d\d:\d\d:\d\d: stream live \(heard \d+ s ago\), lag \d+ s/.test(stdout), () =>
            stdout.slice(-1500),
          ),
        { timeout: 60_000, interval: 500 },
      );
    } finally {
      child.kill('SIGINT');
    }
    const result = await exited;
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(result.stdout).toMatch(/worker stopped\n$/);
  });

  it('says what is missing when no Redis answers', { timeout: 60_000 }, async () => {
    // Without REDIS_URL it falls back to the local Redis; a closed port stands for a machine without one.
    const missing = await runDev({
      env: {},
      localRedisUrl: 'redis://127.0.0.1:9',
      loadConfig: () => {
        throw new Error('not reached: Redis is looked for first');
      },
      log: silentLogger,
      print: () => {},
      signal: new AbortController().signal,
    }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as Error).message).toMatch(
      /REDIS_URL: the worker needs Redis \(its queues, schedules and stream slots\), REDIS_URL is not set and none answers at 127\.0\.0\.1:9 .*Fix: start one \(`redis-server`/s,
    );
    // A REDIS_URL that answers nothing: the worker's own message, without ioredis lines.
    const none = await runCli(['worker', '--sandbox'], {
      PATH: process.env.PATH,
      DATABASE_URL: db.url,
      REDIS_URL: 'redis://127.0.0.1:9',
      HTTP_PORT: '0',
    });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/cannot reach Redis at 127\.0\.0\.1:9: connect ECONNREFUSED/);
    expect(none.stderr).not.toMatch(/Unhandled error event|\n\s+at /);
  });

  it('prints the sandbox settings a shell reads, after its JSON line', { timeout: 60_000 }, async () => {
    const file = join(cwd.path, 'sandbox.env');
    const child = spawnCli(['sandbox', '--env', '--write-env', file, '--live-rate', '1'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const lines = await waitForStep(
      'the sandbox settings',
      () => {
        const all = out.split('\n');
        return ready(all.length > 10 && all, () => out);
      },
      { timeout: 30_000, interval: 100 },
    );
    child.kill('SIGINT');
    await resultWithin(child, 30_000, 'the sandbox to stop');
    const first = JSON.parse(lines[0]!) as { apiUrl: string; token: string };
    expect(lines.slice(1, 10)).toEqual([
      `export VALIDIC_ORG_ID='sandbox-org'`,
      `export VALIDIC_TOKEN='${first.token}'`,
      `export VALIDIC_API_URL='${first.apiUrl}'`,
      expect.stringMatching(/^export VALIDIC_STREAMS_URL='http:\/\/127\.0\.0\.1:\d+\/streams-api'$/),
      expect.stringMatching(/^export VALIDIC_LEGACY_URL='http:\/\/127\.0\.0\.1:\d+\/legacy'$/),
      `export VALIDIC_LEGACY_ORG_ID='sandbox-org'`,
      `export VALIDIC_LEGACY_TOKEN='${first.token}'`,
      `export VALIDIC_ALLOW_INSECURE_LOOPBACK='true'`,
      `export VALIDIC_REQUESTS_PER_HOUR='1000000'`,
    ]);
    expect(readEnvFile(file)).toMatchObject({ VALIDIC_TOKEN: first.token, VALIDIC_API_URL: first.apiUrl });
  });
});
