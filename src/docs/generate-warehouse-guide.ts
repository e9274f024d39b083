/**
 * Generates docs/warehouse.md from the schema's own COMMENT ON texts (migrations applied to a
 * throw-away embedded database), the hand-written introduction next to this file, and the example
 * queries. `--check` fails (exit 1) when the committed file is not what the generator makes, so the
 * guide cannot drift from the schema.
 *
 *   node src/docs/generate-warehouse-guide.ts          # write docs/warehouse.md
 *   node src/docs/generate-warehouse-guide.ts --check  # CI
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Kysely, sql } from 'kysely';
import { migrateToLatest } from '../warehouse/migrate.ts';
import { openWarehouse } from '../warehouse/open-warehouse.ts';
import { EXAMPLE_QUERIES } from './example-queries.ts';

const GUIDE_PATH = fileURLToPath(new URL('../../docs/warehouse.md', import.meta.url));
const INTRO_PATH = new URL('./warehouse-guide-intro.md', import.meta.url);

interface RelationInfo {
  name: string;
  kind: 'table' | 'view';
  comment: string | null;
  key: string | null;
  columns: { name: string; type: string; comment: string | null }[];
}

export async function describeSchema(db: Kysely<any>, schema = 'validic'): Promise<RelationInfo[]> {
  const relations = await sql<{ name: string; kind: string; comment: string | null; key: string | null }>`
    select c.relname as name, case c.relkind when 'v' then 'view' else 'table' end as kind,
      obj_description(c.oid, 'pg_class') as comment,
      (select string_agg(a.attname, ', ' order by k.ord)
         from pg_constraint pk
         cross join lateral unnest(pk.conkey) with ordinality as k(attnum, ord)
         join pg_attribute a on a.attrelid = pk.conrelid and a.attnum = k.attnum
        where pk.conrelid = c.oid and pk.contype = 'p') as key
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind in ('r', 'v', 'p')
    order by case c.relkind when 'v' then 1 else 0 end, c.relname`.execute(db);
  const columns = await sql<{ relation: string; name: string; type: string; comment: string | null }>`
    select c.relname as relation, a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
      col_description(c.oid, a.attnum) as comment
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    where n.nspname = ${schema} and c.relkind in ('r', 'v', 'p')
    order by c.relname, a.attnum`.execute(db);
  return relations.rows.map((r) => ({
    name: r.name,
    kind: r.kind as RelationInfo['kind'],
    comment: r.comment,
    key: r.key,
    columns: columns.rows
      .filter((c) => c.relation === r.name)
      .map(({ name, type, comment }) => ({ name, type, comment })),
  }));
}

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

export async function generateGuide(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'validic-sync-docs-'));
  const warehouse = await openWarehouse({ dataDir: dir });
  try {
    await migrateToLatest(warehouse.db);
    return renderGuide(await readFile(INTRO_PATH, 'utf8'), await describeSchema(warehouse.db));
  } finally {
    await warehouse.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const guide = await generateGuide();
  if (process.argv.includes('--check')) {
    const current = await readFile(GUIDE_PATH, 'utf8').catch(() => '');
    if (current !== guide) {
      process.stderr.write(
        'docs/warehouse.md is out of date with the schema. Fix: run `npm run docs` and commit it.\n',
      );
      process.exitCode = 1;
      return;
    }
    process.stdout.write('docs/warehouse.md is current\n');
    return;
  }
  await writeFile(GUIDE_PATH, guide);
  process.stdout.write(`wrote ${GUIDE_PATH}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
