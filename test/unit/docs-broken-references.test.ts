/**
 * `npm run docs:check` fails on a reference to a file the repository does not hold (the code once cited
 * a facts file 14 times that no clone had): markdown links, backticked paths and markdown file names in
 * documents and code comments; string literals and run-time paths are not references. Also the check as
 * docs:check runs it, on a git repository of its own, and on this repository.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findBrokenReferences } from '../../src/docs/find-broken-references.ts';
import { checkReferences } from '../../src/docs/generate-warehouse-guide.ts';
import { REPO_ROOT } from '../helpers/cli.ts';

const TRACKED = [
  'README.md',
  'docs/platform.md',
  'src/README.md',
  'src/stream/README.md',
  'src/stream/STATE-MACHINE.md',
  'src/stream/reconciliation.ts',
  'src/cli/commands/status.ts',
  'jobs/README.md',
];

function brokenIn(file: string, text: string): string[] {
  const files = new Map([[file, text]]);
  return findBrokenReferences(files, new Set([...TRACKED, file])).map((b) => `${b.line}: ${b.reference}`);
}

describe('references to repository files', () => {
  it('finds a missing file in a markdown link, a backticked path and a markdown name', () => {
    expect(
      brokenIn(
        'src/stream/README.md',
        [
          'See [the facts](../../docs/platform.md#replay) and [gone](../../docs/gone.md).',
          'The state machine: `STATE-MACHINE.md`, `reconciliation.ts`, `src/cli/commands/status.ts`.',
          'Missing: `src/stream/replay-gap.ts`, `cli/nothing/`, `../../jobs/none/`; present: `cli/commands/`.',
          'The facts live in VENDOR-NOTES.md, "Replay"; the guide in (docs/platform.md).',
          'Not references: [web](https://example.com/x.md), [anchor](#replay), `a/b`, `K/N`, `.json`,',
          '`dist/src/cli/main.js`, `.data/demo`, `/tmp/x.md`, `stream-*`, `<uid>/x.ts`.',
        ].join('\n'),
      ),
    ).toEqual([
      '1: ../../docs/gone.md',
      '3: src/stream/replay-gap.ts',
      '3: cli/nothing/',
      '3: ../../jobs/none/',
      '4: VENDOR-NOTES.md',
    ]);
  });

  it('reads the comments of code, not its strings; paths resolve from the file, the root or src/', () => {
    expect(
      brokenIn(
        'src/stream/consumer.ts',
        [
          '/**',
          ' * How to fill a gap (VENDOR-NOTES.md, "Replay"); see `stream/STATE-MACHINE.md` and',
          ' * `src/README.md`, `README.md`, `../../jobs/README.md`, and `docs/missing.md`.',
          ' */',
          "const file = join(dir, 'config.json'); // written by the test: `config/local.json`",
          "const url = 'http://host // `docs/in-a-string.md`';",
          "const doc = 'NOTES.md';",
        ].join('\n'),
      ),
    ).toEqual(['2: VENDOR-NOTES.md', '3: docs/missing.md', '5: config/local.json']);
    expect(brokenIn('deploy/compose.yml', '# see `docs/nothing.md`\nimage: x # `docs/platform.md`')).toEqual([
      '1: docs/nothing.md',
    ]);
  });

  describe('as docs:check runs it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'validic-sync-refs-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('lists tracked and new files of a git repository, and finds what they miss', async () => {
      execFileSync('git', ['init', '--quiet', dir]);
      mkdirSync(join(dir, 'docs'));
      writeFileSync(join(dir, 'README.md'), 'Facts: [platform](docs/platform.md), `docs/gone.md`.\n');
      writeFileSync(join(dir, 'docs/platform.md'), '# facts\n');
      writeFileSync(join(dir, '.gitignore'), 'ignored.md\n');
      writeFileSync(join(dir, 'ignored.md'), '`docs/also-gone.md`\n');
      execFileSync('git', ['add', 'README.md'], { cwd: dir });
      expect(await checkReferences(dir)).toEqual([{ file: 'README.md', line: 1, reference: 'docs/gone.md' }]);
    });

    it('finds none in this repository', async () => {
      expect(await checkReferences(REPO_ROOT)).toEqual([]);
    });
  });
});
