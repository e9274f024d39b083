/**
 * The frictions a new user met in the first minutes, each as the CLI answers now (each of these failed on
 * the code before): a wrong base URL path (404), a refused token (403, 401) and a host that does not
 * resolve end a backfill at once with the setting to fix and exit 2; a port that answers nothing ends it
 * after a bounded wait (the time limit on the run is the test); no stack trace or JSON error line, no
 * ioredis "Unhandled error event", `status` exits 1 when it could not read the queue; `--users` with an
 * unknown uid exits 2; the estimate comes first and the progress counts windows over windows; a password
 * is redacted where it sits, not as a word; a Ctrl-C of `audit` ends without a stack; reading an embedded
 * warehouse that is not there is refused instead of creating an empty one; the worker says which
 * warehouse it writes.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliResult, resultWithin, runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { useSandbox, useTempDir, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { startWorkerChild, workerChildEnv } from '../helpers/worker-fleet.ts';

/** An expected failure: one message and its fix on stderr, no stack, no JSON log line at error level. */
function expectOneMessage(result: CliResult, code: number, message: RegExp): void {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at |"stack"|"level":50|Unhandled error event/);
  expect(result.stdout + result.stderr).not.toMatch(/run the same command again/);
}

describe('the first minutes', () => {
  const sandbox = useSandbox({ seed: 38, users: 3, days: 10 });
  const db = useTestDatabase();
  const dataDir = useTempDir('validic-first-minutes-');
  const redis = useTestRedis('first-minutes');
  const env = (extra: Record<string, string> = {}) => sandboxEnv(sandbox, { DATABASE_URL: db.url, ...extra });
  const backfill = ['backfill', '--from', day(5), '--to', day(0)];

  it('ends a backfill at once on a wrong URL path, a refused token and an unknown host (exit 2)', async () => {
    const wrongPath = await runCli(backfill, env({ VALIDIC_API_URL: `${sandbox.apiUrl}x` }));
    expectOneMessage(
      wrongPath,
      2,
      /VALIDIC_API_URL \(organizations\[\]\.apiUrl\): a path the platform documents for every organization was not found .*answered 404/,
    );
    const unknownToken = await runCli(backfill, env({ VALIDIC_TOKEN: 'not-a-token-of-anyone' }));
    expectOneMessage(unknownToken, 2, /VALIDIC_TOKEN: the platform refused the token .*answered 403/);
    const otherOrg = await runCli(backfill, env({ VALIDIC_TOKEN: sandbox.otherToken }));
    expectOneMessage(otherOrg, 2, /answered 401.*check VALIDIC_ORG_ID too/s);
    const noHost = await runCli(
      backfill,
      env({
        VALIDIC_API_URL: 'http://no-such-host.invalid/api',
        VALIDIC_ALLOW_INSECURE_HOSTS: 'no-such-host.invalid',
      }),
    );
    expectOneMessage(noHost, 2, /VALIDIC_API_URL .*its host name does not resolve/);
  }, 180_000);

  it('gives up on a platform that answers nothing, within a bounded wait (exit 1)', async () => {
    // Port 9 (discard) has no listener on a test machine: every connect is refused.
    const child = spawnCli(backfill, env({ VALIDIC_API_URL: 'http://127.0.0.1:9/api' }));
    // The command's own bound is 30 s of no answer (after the HTTP client's retries): the hang guard.
    const result = await resultWithin(child, 150_000, 'backfill against a closed port to give up');
    expectOneMessage(
      result,
      1,
      /the platform did not answer for \d+ s: .*ECONNREFUSED.*\nFix: check VALIDIC_API_URL/s,
    );
  }, 180_000);

  it('says what a backfill will cost, counts windows over windows, and exits 2 on an unknown uid', async () => {
    const first = await runCli(backfill, env());
    expect(first.code, first.stderr).toBe(0);
    const [estimate] = first.stdout.split('\n');
    const planned = /3 users, (\d+) windows: about (\d+) requests, under a minute at/.exec(estimate!);
    expect(planned, first.stdout).not.toBeNull();
    const windows = Number(planned![1]);
    // 3 users × 7 resources × the record windows of 5 days (one window with the edge days) + 1 of events.
    expect(windows).toBe(3 * 7 * 1 + 1);
    expect(first.stdout).toContain(`windows ${windows}/${windows}`);
    // The plain progress lines (no terminal): the last one is every window done.
    const progress = first.stderr.split('\n').filter((l) => l.startsWith(`backfill ${sandbox.orgId}:`));
    expect(progress.at(-1)).toMatch(new RegExp(`^backfill ${sandbox.orgId}: ${windows}/${windows} windows`));

    const unknown = await runCli(
      [...backfill, '--users', `uid-nope,${sandbox.truth.users()[0]!.uid}`],
      env(),
    );
    expectOneMessage(
      unknown,
      2,
      /--users names a uid that is not \(or no longer\) a user of the organization: uid-nope/,
    );
    expect(unknown.stdout).toContain('1 user, 8 windows');
  }, 180_000);

  it('status exits 1 when it cannot read the queue, without ioredis lines', async () => {
    const result = await runCli(['status'], env({ REDIS_URL: 'redis://127.0.0.1:9' }));
    expectOneMessage(
      result,
      1,
      /status could not read the queue, failed jobs and stream slots: cannot reach Redis at 127\.0\.0\.1:9/,
    );
    expect(result.stdout).toMatch(/^status at .* of PostgreSQL database \S+ on 127\.0\.0\.1:5432/);
  }, 120_000);

  it('redacts a password where it sits, not as a word', async () => {
    const query = await runCli(
      ['status'],
      env({ DATABASE_URL: 'postgres://postgres@127.0.0.1:9/x?password=QueryPw123' }),
    );
    expectOneMessage(
      query,
      1,
      /Cannot reach the PostgreSQL database at postgres:\/\/postgres@127\.0\.0\.1:9\/x\?password=\[REDACTED\]/,
    );
    expect(query.stderr).not.toContain('QueryPw123');
    const word = await runCli(
      ['status'],
      env({ DATABASE_URL: 'postgres://postgres:postgres@127.0.0.1:9/x' }),
    );
    expectOneMessage(
      word,
      1,
      /Cannot reach the PostgreSQL database at postgres:\/\/postgres:\[REDACTED\]@127\.0\.0\.1:9\/x/,
    );
  }, 120_000);

  it('ends a Ctrl-C of audit with one message', async () => {
    const ready = await runCli(backfill, env());
    expect(ready.code, ready.stderr).toBe(0);
    sandbox.control.setFaults({ latencyMs: 400 });
    try {
      const child = spawnCli(['audit', '--sample', '100%'], env({ LOG_LEVEL: 'info' }));
      await new Promise<void>((resolve) => {
        child.stderr!.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('planned audit run')) resolve();
        });
      });
      child.kill('SIGINT');
      const result = await resultWithin(child, 60_000, 'an interrupted audit to end');
      expectOneMessage(
        result,
        1,
        /validic-sync: audit interrupted; the cells audited so far are kept\nFix: /,
      );
    } finally {
      sandbox.control.setFaults({ latencyMs: 0 });
    }
  }, 180_000);

  it('the worker says which warehouse it writes: PostgreSQL by host and database, or the embedded default', async () => {
    const withPassword = new URL(db.url);
    withPassword.password = 'trust-ignores-it'; // the test cluster trusts local logins
    const onPostgres = await startWorkerChild(workerChildEnv(sandbox, withPassword.href, redis));
    const postgres = await onPostgres.stop();
    expect(postgres.stdout).toMatch(
      new RegExp(
        `^worker writes to PostgreSQL database ${withPassword.pathname.slice(1)} on 127\\.0\\.0\\.1:5432 as postgres \\(DATABASE_URL\\)$`,
        'm',
      ),
    );
    expect(postgres.stdout + postgres.stderr).not.toContain('trust-ignores-it');
    const dir = join(dataDir.path, 'worker');
    const embedded = await startWorkerChild(
      workerChildEnv(sandbox, '', redis, { DATABASE_URL: '', VALIDIC_DATA_DIR: dir }),
    );
    const pglite = await embedded.stop();
    expect(pglite.stdout).toContain(
      `worker writes to the embedded warehouse (PGlite) in ${dir}, as DATABASE_URL is not set`,
    );
  }, 180_000);

  it('refuses to read an embedded warehouse that is not there', async () => {
    const missing = join(dataDir.path, 'not-synced');
    const result = await runCli(['sql', 'select 1'], { PATH: process.env.PATH, VALIDIC_DATA_DIR: missing });
    expectOneMessage(
      result,
      2,
      /VALIDIC_DATA_DIR \(dataDir\): there is no embedded warehouse in .*not-synced/,
    );
    expect(existsSync(missing)).toBe(false);
  }, 60_000);
});
