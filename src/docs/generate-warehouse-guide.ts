/**
 * Generates the warehouse's documents from the schema's own COMMENT ON texts (migrations applied to a
 * throw-away embedded database): docs/warehouse.md (with the hand-written introduction next to this
 * file and the example queries) and docs/dbt/sources.yml (render-dbt-sources.ts). `--check` fails
 * (exit 1) when a committed file is not what the generator makes, so neither can drift from the schema,
 * and when a file of the repository refers to a file the repository does not hold
 * (find-broken-references.ts).
 *
 *   node src/docs/generate-warehouse-guide.ts          # write them (npm run docs)
 *   node src/docs/generate-warehouse-guide.ts --check  # CI (npm run docs:check)
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describeSchema, type RelationInfo } from '../warehouse/describe-schema.ts';
import { migrateToLatest } from '../warehouse/migrate.ts';
import { openWarehouse } from '../warehouse/open-warehouse.ts';
import { EXAMPLE_QUERIES } from './example-queries.ts';
import { type BrokenReference, findBrokenReferences } from './find-broken-references.ts';
import { renderDbtSources } from './render-dbt-sources.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INTRO_PATH = new URL('./warehouse-guide-intro.md', import.meta.url);

const cell = (text: string | null) => (text ?? '').replaceAll('|', '\\|').replaceAll('\n', ' ');

export function renderGuide(intro: string, relations: RelationInfo[]): string {
  const out: string[] = [intro.trimEnd(), '', '## Tables and views', ''];
  for (const kind of ['table', 'view'] as const) {
    for (const r of relations.filter((x) => x.kind === kind)) {
      out.push(
        `- [\`validic.${r.name}\`](#validic${r.name.replaceAll('_', '')}) (${kind}): ${cell(r.comment)}`,
      );
    }
  }
  for (const r of relations) {
    out.push(
      '',
      `### validic.${r.name}`,
      '',
      `*${r.kind}*${r.key ? `, key \`(${r.key})\`` : ''}. ${cell(r.comment)}`,
      '',
    );
    out.push('| column | type | meaning |', '|---|---|---|');
    for (const c of r.columns) out.push(`| \`${c.name}\` | ${c.type} | ${cell(c.comment)} |`);
  }
  out.push(
    '',
    '## Example queries',
    '',
    'Each of these runs in the test suite against a warehouse filled from the sandbox.',
  );
  for (const q of EXAMPLE_QUERIES)
    out.push('', `### ${q.title}`, '', q.description, '', '```sql', q.sql, '```');
  return `${out.join('\n')}\n`;
}

/** Every generated document, by its path from the repository root. */
export async function generateDocs(): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'validic-sync-docs-'));
  const warehouse = await openWarehouse({ dataDir: dir });
  try {
    await migrateToLatest(warehouse.db);
    const relations = await describeSchema(warehouse.db);
    return {
      'docs/warehouse.md': renderGuide(await readFile(INTRO_PATH, 'utf8'), relations),
      'docs/dbt/sources.yml': renderDbtSources(relations),
    };
  } finally {
    await warehouse.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The references of the repository at `root` to files it does not hold: every file git tracks, or would
 * track (untracked and not ignored), is read and checked against that same list.
 */
export async function checkReferences(root: string): Promise<BrokenReference[]> {
  const { stdout } = await promisify(execFile)('git', ['ls-files', '-z', '-co', '--exclude-standard'], {
    cwd: root,
    maxBuffer: 64 * 1024 * 1024,
  });
  const paths = [...new Set(stdout.split('\0').filter(Boolean))];
  const texts = new Map<string, string>();
  for (const path of paths) {
    // A file deleted in the working tree but still in the index is no longer there to refer to.
    const text = await readFile(join(root, path), 'utf8').catch(() => undefined);
    if (text !== undefined) texts.set(path, text);
  }
  return findBrokenReferences(texts, new Set(texts.keys()));
}

async function main(): Promise<void> {
  const docs = await generateDocs();
  const check = process.argv.includes('--check');
  for (const [path, content] of Object.entries(docs)) {
    const file = join(REPO_ROOT, path);
    if (check) {
      if ((await readFile(file, 'utf8').catch(() => '')) !== content) {
        process.stderr.write(
          `${path} is out of date with the schema. Fix: run \`npm run docs\` and commit it.\n`,
        );
        process.exitCode = 1;
      } else process.stdout.write(`${path} is current\n`);
    } else {
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content);
      process.stdout.write(`wrote ${path}\n`);
    }
  }
  if (check) {
    const broken = await checkReferences(REPO_ROOT);
    for (const b of broken)
      process.stderr.write(
        `${b.file}:${b.line}: refers to ${b.reference}, which the repository does not hold. Fix: correct the path, or add the file.\n`,
      );
    if (broken.length > 0) process.exitCode = 1;
    else process.stdout.write('every reference to a repository file resolves\n');
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
