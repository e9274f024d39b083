/**
 * The rooms of the house stay apart (src/README.md, "The rooms" and "Directions"): the import graph of
 * src/ and jobs/ (static, type-only, side-effect and dynamic imports, and re-exports) is read from the
 * sources and checked against the rules below. Each rule also runs against a small hand-made graph that
 * breaks it, so the test is seen to fail.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** file (relative to the root, `/`-separated) → what it imports: other files, or package names. */
type ImportGraph = Map<string, { files: string[]; packages: string[] }>;

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

/**
 * The module specifiers a source imports. TypeScript 7 has no JavaScript API to ask, and a regular
 * expression is enough for this codebase's formatted sources (biome puts every import at a line start);
 * block comments are removed first so a commented-out import does not count.
 */
function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '');
  const patterns = [
    /^\s*(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((match) => match[1]!));
}

function readImportGraph(dirs: string[]): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of dirs.flatMap(sourceFiles)) {
    const files: string[] = [];
    const packages: string[] = [];
    for (const fileName of importSpecifiers(readFileSync(path.join(ROOT, file), 'utf8'))) {
      if (fileName.startsWith('.'))
        files.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), fileName)));
      else
        packages.push(
          fileName.startsWith('@') ? fileName.split('/').slice(0, 2).join('/') : fileName.split('/')[0]!,
        );
    }
    graph.set(file, { files, packages });
  }
  return graph;
}

/** Every import cycle, as the files of one strongly connected component (Tarjan). */
function findCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)?.files ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)?.files.includes(file)) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return cycles;
}

/** The files `start` reaches through imports, itself included. */
function reachable(graph: ImportGraph, start: string): Set<string> {
  const seen = new Set<string>([start]);
  const queue = [start];
  while (queue.length > 0) {
    for (const next of graph.get(queue.pop()!)?.files ?? []) {
      if (graph.has(next) && !seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return seen;
}

/** Packages that do no I/O: what normalize/ (and everything it imports) may use. */
const PURE_PACKAGES = new Set(['zod', 'date-fns', 'node:crypto']);

/** normalize/ is pure: nothing it reaches imports a package that does I/O. */
function normalizeDoingIo(graph: ImportGraph): string[] {
  const problems: string[] = [];
  for (const file of graph.keys()) {
    if (!file.startsWith('src/normalize/')) continue;
    for (const reached of reachable(graph, file)) {
      for (const pkg of graph.get(reached)!.packages) {
        if (!PURE_PACKAGES.has(pkg)) problems.push(`${file} reaches ${reached}, which imports ${pkg}`);
      }
    }
  }
  return problems;
}

/**
 * What stream/ may use of the warehouse: its handle, the loader's entry point, the cursors, and the
 * stream's own bookkeeping as named operations (the gap record, the reconciliation passes, and the
 * probe that tells what a pass brought that the warehouse held nowhere). Never the schema or kysely.
 */
const WAREHOUSE_ENTRY_POINTS = [
  /^src\/warehouse\/open-warehouse\.ts$/,
  /^src\/warehouse\/loader\/apply-batch\.ts$/,
  /^src\/warehouse\/cursors\.ts$/,
  /^src\/warehouse\/stream-bookkeeping\.ts$/,
];

function streamReachingIntoWarehouse(graph: ImportGraph): string[] {
  const problems: string[] = [];
  for (const [file, { files, packages }] of graph) {
    if (!file.startsWith('src/stream/')) continue;
    for (const target of files) {
      if (target.startsWith('src/warehouse/') && !WAREHOUSE_ENTRY_POINTS.some((entry) => entry.test(target)))
        problems.push(`${file} imports ${target}`);
    }
    if (packages.includes('kysely')) problems.push(`${file} imports kysely`);
  }
  return problems;
}

/** The catalog is loaded by the worker and the inline runner; nothing else in src/ knows a job. */
const JOB_CATALOG_USERS = new Set(['src/worker/start-worker.ts', 'src/worker/catalog-inline-runner.ts']);

/** The job context (jobs/job-context.ts, no job) is built by the runtime, the process's composition root. */
const JOB_CONTEXT_BUILDERS = new Set(['src/worker/runtime.ts']);

function srcImportingJobs(graph: ImportGraph): string[] {
  const problems: string[] = [];
  for (const [file, { files }] of graph) {
    if (!file.startsWith('src/') || JOB_CATALOG_USERS.has(file)) continue;
    for (const target of files) {
      if (!target.startsWith('jobs/')) continue;
      if (target === 'jobs/job-context.ts' && JOB_CONTEXT_BUILDERS.has(file)) continue;
      problems.push(`${file} imports ${target}`);
    }
  }
  return problems;
}

/** Jobs reach the database through their context's named operations, never through kysely. */
function jobsImportingKysely(graph: ImportGraph): string[] {
  return [...graph]
    .filter(([file, { packages }]) => file.startsWith('jobs/') && packages.includes('kysely'))
    .map(([file]) => `${file} imports kysely`);
}

/**
 * The floors of the house, lowest first (src/README.md, "The rooms"). A file imports from its own room
 * or from a room on a lower floor, never from a room on its floor or above: type-only imports count.
 * Rooms on one floor know nothing of each other.
 */
const FLOORS: readonly (readonly string[])[] = [
  ['redact', 'time', 'pipeline'],
  ['errors'],
  ['log', 'runtime', 'sandbox'],
  ['http', 'telemetry'],
  ['queue'],
  ['validic'],
  ['normalize'],
  ['config'],
  ['warehouse'],
  ['budget', 'audit'],
  ['legacy'],
  ['push', 'stream'],
  ['server', 'metrics'],
  ['jobs'],
  ['worker'],
  ['report', 'docs'],
  ['demo'],
  ['cli'],
];

/** The room of a file: `jobs`, or the first folder under src/. */
function roomOf(file: string): string {
  return file.startsWith('jobs/') ? 'jobs' : (file.split('/')[1] ?? '');
}

/** Every import that runs up a floor or sideways to another room of its floor, and every unplaced room. */
function importsAgainstFloors(graph: ImportGraph, floors: readonly (readonly string[])[] = FLOORS): string[] {
  const floorOf = new Map(floors.flatMap((rooms, floor) => rooms.map((room) => [room, floor] as const)));
  const problems: string[] = [];
  for (const [file, { files }] of graph) {
    const room = roomOf(file);
    const floor = floorOf.get(room);
    if (floor === undefined) {
      problems.push(`${file}: its room ${room} is on no floor`);
      continue;
    }
    for (const target of files) {
      const targetRoom = roomOf(target);
      if (targetRoom === room || !graph.has(target)) continue;
      const targetFloor = floorOf.get(targetRoom);
      if (targetFloor === undefined || targetFloor >= floor)
        problems.push(
          `${file} (${room}, floor ${floor}) imports ${target} (${targetRoom}, floor ${targetFloor ?? '?'})`,
        );
    }
  }
  return problems;
}

/**
 * The values a source imports from kysely (`sql`, `Kysely`, …), type-only imports left out: outside
 * src/warehouse/ there must be none, so every statement lives in the warehouse's room.
 */
function kyselyValues(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '');
  const values: string[] = [];
  for (const match of code.matchAll(/^\s*import\s+(type\s+)?\{([^}]*)\}\s*from\s*['"]kysely['"]/gm)) {
    if (match[1]) continue;
    for (const part of match[2]!
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean))
      if (!part.startsWith('type ')) values.push(part);
  }
  return values;
}

function sqlOutsideWarehouse(files: Map<string, string>): string[] {
  return [...files]
    .filter(([file]) => !file.startsWith('src/warehouse/'))
    .flatMap(([file, source]) => kyselyValues(source).map((name) => `${file} imports ${name} from kysely`));
}

/**
 * The floors as src/README.md lists them ("## Floors": one numbered line per floor, its rooms in
 * backticks before any parenthesis), lowest first.
 */
function floorsInReadme(readme: string): string[][] {
  const section = readme.split(/^## Floors$/m)[1]?.split(/^## /m)[0] ?? '';
  return [...section.matchAll(/^\d+\. (.*)$/gm)].map((line) =>
    [...line[1]!.split('(')[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
  );
}

const graph = readImportGraph(['src', 'jobs']);

describe('import boundaries of src/ and jobs/', () => {
  it('reads the whole tree', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('src/cli/main.ts')?.packages).toContain('commander');
  });

  it('reads every kind of import', () => {
    const source = [
      "import type { A } from './a.ts';",
      'import {',
      '  b,',
      '  type C,',
      "} from '../b.ts';",
      "export { d } from './d.ts';",
      "import './side-effect.ts';",
      "const e = await import('./e.ts');",
      "/* import { f } from './f.ts'; */",
      "const text = 'this is not from a module';",
    ].join('\n');
    expect(importSpecifiers(source)).toEqual(['./a.ts', '../b.ts', './d.ts', './side-effect.ts', './e.ts']);
  });

  it('imports only from its own room or a lower floor', () => {
    expect(importsAgainstFloors(graph)).toEqual([]);
  });

  it('has no import cycle (type-only imports count)', () => {
    expect(findCycles(graph)).toEqual([]);
  });

  it('keeps normalize/ free of I/O', () => {
    expect(normalizeDoingIo(graph)).toEqual([]);
  });

  it("keeps stream/ out of the warehouse's internals", () => {
    expect(streamReachingIntoWarehouse(graph)).toEqual([]);
  });

  it('lets only the two entry points import jobs/, and the runtime the job context', () => {
    expect(srcImportingJobs(graph)).toEqual([]);
  });

  it('keeps every SQL statement in src/warehouse/ (elsewhere kysely gives types only)', () => {
    const sources = new Map(
      [...graph.keys()].map((file) => [file, readFileSync(path.join(ROOT, file), 'utf8')] as const),
    );
    expect(sqlOutsideWarehouse(sources)).toEqual([]);
  });

  it('keeps kysely out of jobs/', () => {
    expect(jobsImportingKysely(graph)).toEqual([]);
  });

  it('lists the same floors in src/README.md as here', () => {
    const readme = readFileSync(path.join(ROOT, 'src/README.md'), 'utf8');
    expect(floorsInReadme(readme)).toEqual(FLOORS.map((rooms) => [...rooms]));
  });
});

describe('each rule fails on a graph that breaks it', () => {
  it('reads a README whose floors differ', () => {
    const readme = [
      '## Floors',
      '',
      '1. `time`, `redact` (low)',
      '2. `errors`',
      '',
      '## Next',
      '3. `cli`',
    ].join('\n');
    expect(floorsInReadme(readme)).toEqual([['time', 'redact'], ['errors']]);
    expect(floorsInReadme(readme)).not.toEqual(FLOORS.slice(0, 2).map((rooms) => [...rooms]));
  });

  const made = (edges: Record<string, { files?: string[]; packages?: string[] }>): ImportGraph =>
    new Map(
      Object.entries(edges).map(([file, e]) => [file, { files: e.files ?? [], packages: e.packages ?? [] }]),
    );

  it('finds an import up a floor and one sideways on a floor', () => {
    const floors = [['time'], ['http', 'validic'], ['queue']];
    const problems = importsAgainstFloors(
      made({
        'src/time/clock.ts': { files: ['src/queue/job.ts'] },
        'src/http/client.ts': { files: ['src/validic/limits.ts', 'src/time/clock.ts'] },
        'src/validic/limits.ts': {},
        'src/queue/job.ts': { files: ['src/http/client.ts'] },
        'src/extra/x.ts': {},
      }),
      floors,
    );
    expect(problems).toEqual([
      'src/time/clock.ts (time, floor 0) imports src/queue/job.ts (queue, floor 2)',
      'src/http/client.ts (http, floor 1) imports src/validic/limits.ts (validic, floor 1)',
      'src/extra/x.ts: its room extra is on no floor',
    ]);
  });

  it('finds SQL outside the warehouse, and lets type-only imports pass', () => {
    const problems = sqlOutsideWarehouse(
      new Map([
        ['src/budget/x.ts', "import { type Kysely, sql } from 'kysely';"],
        ['src/metrics/y.ts', "import type { Kysely } from 'kysely';"],
        ['src/warehouse/z.ts', "import { sql } from 'kysely';"],
      ]),
    );
    expect(problems).toEqual(['src/budget/x.ts imports sql from kysely']);
  });

  it('finds a cycle of three and a file importing itself', () => {
    const cycles = findCycles(
      made({
        'src/a.ts': { files: ['src/b.ts'] },
        'src/b.ts': { files: ['src/c.ts'] },
        'src/c.ts': { files: ['src/a.ts'] },
        'src/d.ts': { files: ['src/d.ts', 'src/a.ts'] },
      }),
    );
    expect(cycles).toEqual(expect.arrayContaining([['src/a.ts', 'src/b.ts', 'src/c.ts'], ['src/d.ts']]));
  });

  it('finds I/O reached from normalize/ through another folder', () => {
    const problems = normalizeDoingIo(
      made({
        'src/normalize/x.ts': { files: ['src/util/y.ts'], packages: ['zod'] },
        'src/util/y.ts': { packages: ['pg'] },
      }),
    );
    expect(problems).toEqual(['src/normalize/x.ts reaches src/util/y.ts, which imports pg']);
  });

  it("finds stream/ importing the warehouse's schema and kysely", () => {
    const problems = streamReachingIntoWarehouse(
      made({
        'src/stream/s.ts': {
          files: ['src/warehouse/database.ts', 'src/warehouse/loader/apply-batch.ts'],
          packages: ['kysely'],
        },
      }),
    );
    expect(problems).toEqual([
      'src/stream/s.ts imports src/warehouse/database.ts',
      'src/stream/s.ts imports kysely',
    ]);
  });

  it('finds src/ importing a job, and a job importing kysely', () => {
    const g = made({
      'src/cli/x.ts': { files: ['jobs/users-sync.ts'] },
      'src/worker/start-worker.ts': { files: ['jobs/index.ts'] },
      'src/worker/runtime.ts': { files: ['jobs/job-context.ts', 'jobs/users-sync.ts'] },
      'jobs/users-sync.ts': { packages: ['kysely'] },
    });
    expect(srcImportingJobs(g)).toEqual([
      'src/cli/x.ts imports jobs/users-sync.ts',
      'src/worker/runtime.ts imports jobs/users-sync.ts',
    ]);
    expect(jobsImportingKysely(g)).toEqual(['jobs/users-sync.ts imports kysely']);
  });
});
