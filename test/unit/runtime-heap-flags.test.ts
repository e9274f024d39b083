/** Every launcher of the product passes the same V8 heap flags (src/runtime/heap-flags.ts). */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { NODE_HEAP_FLAGS } from '../../src/runtime/heap-flags.ts';

const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('NODE_HEAP_FLAGS', () => {
  it('are accepted by this Node (a flag V8 dropped would stop every launcher)', () => {
    const out = execFileSync(process.execPath, [...NODE_HEAP_FLAGS, '-e', 'console.log("ok")'], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('ok');
  });

  it('are on the npm scripts that start the CLI', async () => {
    const { scripts } = JSON.parse(await read('package.json')) as { scripts: Record<string, string> };
    for (const name of ['cli', 'demo', 'start']) {
      expect(scripts[name]).toMatch(new RegExp(`^node ${NODE_HEAP_FLAGS.join(' ')} src/cli/main\\.ts`));
    }
  });

  it("are on the CLI's shebang, which the built bin keeps", async () => {
    const firstLine = (await read('src/cli/main.ts')).split('\n')[0];
    expect(firstLine).toBe(`#!/usr/bin/env -S node ${NODE_HEAP_FLAGS.join(' ')}`);
  });

  it("are on the Dockerfile's entrypoint", async () => {
    const entrypoint = /^ENTRYPOINT (.+)$/m.exec(await read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint ?? 'null')).toEqual(['node', ...NODE_HEAP_FLAGS, 'src/cli/main.ts']);
  });
});
