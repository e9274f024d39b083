/**
 * A PRIVATE Redis server (a `redis-server` child on a free port, no persistence) that a fault test may
 * kill and start again on the same port. The machine's shared Redis on 6379 is never touched.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from './private-postgres.ts';

export interface PrivateRedis {
  port: number;
  url: string;
  /** SIGKILL: the server dies with every key (nothing is persisted). */
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/Ready to accept connections/i.test(output)) {
          proc.stdout!.off('data', onData);
          proc.stdout!.resume();
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
    });
  };
  const kill = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGKILL');
    await exited;
  };
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, kill, start, stop: kill };
}
