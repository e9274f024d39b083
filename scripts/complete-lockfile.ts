/**
 * Writes into package-lock.json the optional platform packages that this machine's registry mirror
 * does not serve (biome's and msgpackr-extract's builds for macOS, Windows, Android, musl, 32-bit ARM).
 *
 * Why: `npm install` here can only record the packages the mirror has, and `npm ci` refuses a lockfile
 * that lacks an entry for any optional dependency, so without these entries no clean install (CI, the
 * Docker image, a user's machine) accepts the lockfile. Each entry names the exact version its parent
 * pins and the os/cpu/libc the package is published for (its name says which), so npm skips it on every
 * other platform and fetches it on its own; an integrity hash is left out because this machine cannot
 * read the tarball (npm records it on first fetch elsewhere). Run after every `npm install` that changes
 * the lockfile: `npm run lockfile:complete` (CI's `npm ci` fails while an entry is missing).
 */
import { readFileSync, writeFileSync } from 'node:fs';

interface LockEntry {
  version: string;
  dev?: boolean;
  optional?: boolean;
  license?: string;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
}

/** `…-darwin-arm64`, `…-linux-x64-musl`, `…-linux-arm`: the platform a package's name is built for. */
export function platformOf(name: string): Pick<LockEntry, 'os' | 'cpu' | 'libc'> | undefined {
  const match = /-(android|darwin|linux|win32|freebsd)-(arm64|x64|arm|ia32)(-musl)?$/.exec(name);
  if (!match) return undefined;
  const [, os, cpu, musl] = match;
  return { os: [os!], cpu: [cpu!], ...(os === 'linux' ? { libc: [musl ? 'musl' : 'glibc'] } : {}) };
}

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8')) as { packages: Record<string, LockEntry> };
const added: string[] = [];
for (const [key, parent] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(parent.optionalDependencies ?? {})) {
    const entryKey = `node_modules/${name}`;
    if (lock.packages[entryKey]) continue;
    const platform = platformOf(name);
    if (!platform)
      throw new Error(
        `${name} (optional dependency of ${key || 'the project'}) is not in the lockfile and its name names no platform: run npm install where the registry serves it`,
      );
    lock.packages[entryKey] = {
      version,
      ...(parent.dev ? { dev: true } : {}),
      optional: true,
      ...(parent.license ? { license: parent.license } : {}),
      ...platform,
    };
    added.push(`${name}@${version}`);
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length ? `added ${added.length}: ${added.join(', ')}` : 'the lockfile is complete');
