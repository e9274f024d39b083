/**
 * References to repository files that the repository does not hold: a markdown link whose target is
 * missing, or a path named in prose (a README, a code comment) that resolves to no tracked file. `npm run
 * docs:check` fails on any, so a document or comment cannot point at a file that was renamed, removed or
 * never committed. Pure: it reads the texts and the list of tracked files it is given.
 *
 * What counts as a reference, in the text a reader reads (markdown files whole; in code and config files
 * only their comments, since string literals name files of a test's own making):
 * - a markdown link `[text](target)` with a relative target (its `#anchor` and `?query` ignored);
 * - a backticked path with a file extension (`../jobs/README.md`, `load-transaction.ts`), or a folder
 *   (`cli/commands/`, or a path under a folder of the repository: `src/stream`);
 * - any name of a markdown file, backticked or not: `docs/platform.md`, `STATE-MACHINE.md`.
 * A path resolves against the file's own folder, the repository root, or `src/` (code comments name files
 * from there); a bare file name resolves when a tracked file has that name. Globs, placeholders and
 * paths of files that are made at run time (`dist/`, `.data/`, `node_modules/`) are not references.
 */
import { posix } from 'node:path';

export interface BrokenReference {
  /** The file that holds the reference, from the repository root. */
  file: string;
  line: number;
  reference: string;
}

/** Files whose whole text is prose. */
const PROSE = /\.md$/;
/** Code and config files whose comments are prose. */
const COMMENTED = /(\.(ts|js|mjs|sh|ya?ml)|(^|\/)Dockerfile|(^|\/)\.ci\/run)$/;

const LINK = /\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
const BACKTICKED = /`([^`\n]+)`/g;
/** A markdown file's name in prose: `README.md`, `docs/platform.md`, `../../docs/platform.md`. */
const MARKDOWN_NAME = /(?<![\w./@:~-])((?:\.\.?\/)*[\w.-]*[\w-]\/?(?:[\w.-]+\/)*[\w.-]+\.md)(?![\w/-])/g;
/** A backticked path: letters, digits and `._-`, in segments separated by `/`. */
const PATH_LIKE = /^(?:\.\.?\/)*[\w.-]+(?:\/[\w.-]+)*\/?$/;
/** A file name: a name, then an extension. */
const FILE_NAME = /(^|\/)[\w-][\w.-]*\.(md|ts|js|json|ya?ml|sh|sql|txt|html)$/;
/** Made at run time or outside the repository: never a broken reference. */
const RUNTIME = /^(?:\.\/)?(dist|\.data|node_modules|coverage|tmp|\/)/;

export function findBrokenReferences(
  files: ReadonlyMap<string, string>,
  tracked: ReadonlySet<string>,
): BrokenReference[] {
  const index = indexTracked(tracked);
  const broken: BrokenReference[] = [];
  for (const [file, text] of files) {
    const prose = PROSE.test(file);
    if (!prose && !COMMENTED.test(file)) continue;
    const lines = text.split('\n');
    lines.forEach((raw, i) => {
      const line = prose ? raw : commentOf(raw, file);
      if (!line) return;
      const found = new Set<string>();
      if (prose) {
        for (const match of line.matchAll(LINK)) {
          const target = linkTarget(match[1]!);
          if (target && !index.resolves(file, target, false)) found.add(target);
        }
      }
      for (const match of line.matchAll(BACKTICKED)) {
        const path = match[1]!.trim();
        if (!PATH_LIKE.test(path) || RUNTIME.test(path)) continue;
        // A folder counts when it says so: a trailing `/`, a relative start, or a top folder of ours.
        const folder = path.endsWith('/') || path.startsWith('.') || index.isTopFolder(path.split('/')[0]!);
        if (!FILE_NAME.test(path) && !(path.includes('/') && folder)) continue;
        if (!index.resolves(file, path, true)) found.add(path);
      }
      for (const match of line.matchAll(MARKDOWN_NAME)) {
        const path = match[1]!;
        if (!RUNTIME.test(path) && !index.resolves(file, path, true)) found.add(path);
      }
      for (const reference of found) broken.push({ file, line: i + 1, reference });
    });
  }
  return broken;
}

/** The comment text of one line of code (`//`, `/* … *\/`, ` * `, `#`), else ''. */
function commentOf(line: string, file: string): string {
  const trimmed = line.trim();
  if (/\.(ya?ml|sh)$|Dockerfile$|\.ci\/run$/.test(file)) {
    const hash = line.indexOf('#');
    return hash >= 0 && (hash === 0 || /\s/.test(line[hash - 1]!)) ? line.slice(hash) : '';
  }
  if (trimmed.startsWith('*') || trimmed.startsWith('/*') || trimmed.startsWith('//')) return trimmed;
  const slash = line.search(/\s\/\/\s/);
  return slash >= 0 && !insideString(line.slice(0, slash)) ? line.slice(slash) : '';
}

/** Whether text ends inside a string literal: an odd count of one kind of quote (escapes aside). */
function insideString(before: string): boolean {
  const unescaped = before.replace(/\\./g, '');
  return ["'", '"', '`'].some((quote) => unescaped.split(quote).length % 2 === 0);
}

function linkTarget(raw: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(raw) || raw.startsWith('#') || raw.startsWith('<')) return undefined;
  const path = decodeURIComponent(raw.replace(/[#?].*$/, ''));
  return path === '' || RUNTIME.test(path) ? undefined : path;
}

interface TrackedIndex {
  resolves(from: string, path: string, loose: boolean): boolean;
  isTopFolder(name: string): boolean;
}

function indexTracked(tracked: ReadonlySet<string>): TrackedIndex {
  const folders = new Set<string>();
  const names = new Set<string>();
  const top = new Set<string>();
  for (const file of tracked) {
    names.add(posix.basename(file));
    if (file.includes('/')) top.add(file.split('/')[0]!);
    for (let dir = posix.dirname(file); dir !== '.'; dir = posix.dirname(dir)) folders.add(dir);
  }
  const exists = (path: string) => {
    const clean = posix.normalize(path).replace(/\/$/, '');
    return clean === '.' || tracked.has(clean) || folders.has(clean);
  };
  return {
    isTopFolder: (name) => top.has(name),
    resolves(from, path, loose) {
      const own = posix.join(posix.dirname(from), path);
      if (exists(own)) return true;
      if (!loose) return false;
      if (exists(path) || exists(posix.join('src', path))) return true;
      // A bare file name ("STATE-MACHINE.md") names a file somewhere in the repository.
      return !path.includes('/') && names.has(path);
    },
  };
}
