/**
 * `stream --exit-when-idle S` with connection hygiene on: hygiene drops a quiet connection after
 * `stream.maxPokesWithoutData` pokes (5 s apart), and a dropped connection is never idle, so an S that
 * long could never stop the command. It is refused up front (exit 2) with the fix.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';

describe('stream --exit-when-idle with connection hygiene', () => {
  const dir = mkdtempSync(join(tmpdir(), 'validic-stream-usage-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses an idle time hygiene would never let pass, naming both settings', async () => {
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        stream: { maxPokesWithoutData: 5 },
        organizations: [{ orgId: 'org', token: 'token-never-used' }],
      }),
    );
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, VALIDIC_SYNC_CONFIG: config };
    const refused = await runCli(['stream', '--exit-when-idle', '25'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "--exit-when-idle 25 is not shorter than connection hygiene's drop after 5 pokes (25 s)",
    );
    expect(refused.stderr).toMatch(/give --exit-when-idle below 25, or raise stream\.maxPokesWithoutData/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });
});
