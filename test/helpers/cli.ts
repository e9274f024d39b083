/**
 * Runs the real `validic-sync` CLI as a child process (the same Node that runs the tests), so end-to-end
 * tests exercise argument parsing, config loading, exit codes and output exactly as a user meets them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '../../src/sandbox/index.ts';

export const CLI_MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI pointed at a sandbox and a database; nothing inherited but PATH and HOME. */
export function sandboxEnv(
  sandbox: Sandbox,
  extra: Record<string, string | undefined> = {},
): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    VALIDIC_ORG_ID: sandbox.orgId,
    VALIDIC_TOKEN: sandbox.token,
    VALIDIC_API_URL: sandbox.apiUrl,
    VALIDIC_STREAMS_URL: sandbox.streamsUrl,
    VALIDIC_LEGACY_URL: sandbox.legacyUrl,
    VALIDIC_LEGACY_ORG_ID: sandbox.legacyOrgId,
    VALIDIC_LEGACY_TOKEN: sandbox.legacyToken,
    VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true',
    // Tests are not about pacing (bench/ measures it): a budget far above what they use.
    VALIDIC_REQUESTS_PER_HOUR: '10000000',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  /** Flags for Node itself, before the script (e.g. `NODE_HEAP_FLAGS`, as every launcher passes them). */
  options: { nodeArgs?: readonly string[] } = {},
): ChildProcess & { result: Promise<CliResult> } {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI_MAIN, ...args], {
    env,
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const result = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return Object.assign(child, { result });
}

/**
 * Runs the CLI to its end. One that is still running after `timeoutMs` is killed and fails the test
 * with its command and the tail of its log, so a hung command names itself instead of running into the
 * test's timeout.
 */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  { timeoutMs = 120_000 }: { timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawnCli(args, env);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      void child.result.then((r) =>
        reject(
          new Error(
            `validic-sync ${args.join(' ')} still running after ${timeoutMs / 1000} s; its stderr ends: ${r.stderr.slice(-1500)}`,
          ),
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([child.result, late]);
  } finally {
    clearTimeout(timer);
  }
}
