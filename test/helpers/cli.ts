/**
 * Runs the real `validic-sync` CLI as a child process (the same Node that runs the tests), so end-to-end
 * tests exercise argument parsing, config loading, exit codes and output exactly as a user meets them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sandboxEnvironment } from '../../src/demo/sandbox-environment.ts';
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
    // The settings `sandbox --env` prints; tests are not about pacing (bench/ measures it): a budget far
    // above what they use.
    ...sandboxEnvironment(sandbox, { requestsPerHour: 10_000_000 }),
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
 * The child's result, or, when it is still running after `timeoutMs`, the child killed and an error that
 * says what was waited for (`what`) and ends with the tail of its log, so a hung child names itself
 * instead of running into the test's own timeout.
 */
export async function resultWithin(
  child: ChildProcess & { result: Promise<CliResult> },
  timeoutMs: number,
  what: string,
): Promise<CliResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      void child.result.then((r) =>
        reject(
          new Error(
            `timed out after ${timeoutMs / 1000} s waiting for ${what}; its log ends: ${r.stderr.slice(-3000)}`,
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

/** Runs the CLI to its end, within `timeoutMs` (resultWithin). */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  { timeoutMs = 120_000 }: { timeoutMs?: number } = {},
): Promise<CliResult> {
  return resultWithin(spawnCli(args, env), timeoutMs, `validic-sync ${args.join(' ')} to end`);
}
