/**
 * The product's version, from its package.json: found by walking up from this file, because the
 * sources run from `src/` (npm scripts, the image) and from `dist/src/` (the installed `bin`).
 */
import { existsSync, readFileSync } from 'node:fs';

function readVersion(): string {
  for (let dir = new URL('./', import.meta.url); dir.pathname !== '/'; dir = new URL('../', dir)) {
    const file = new URL('package.json', dir);
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'validic-sync' && pkg.version) return pkg.version;
  }
  return 'unknown';
}

export const VERSION = readVersion();

/** Sent with every request to the platform, so the provider can tell our traffic and its version apart. */
export const USER_AGENT = `validic-sync/${VERSION} node/${process.versions.node}`;
