/**
 * One process at a time per embedded warehouse folder. PGlite keeps no lock of its own: a second process
 * opens the same folder without a word, and two PostgreSQL instances writing one data directory corrupt
 * it (a `status` beside `npm run dev` would do exactly that). So the folder holds `validic-sync.pid`
 * while a process has it open; another process is refused with its pid, and a file left by a process
 * that died is taken over. Within one process the folder may be opened more than once (the `sql`
 * command's worker thread, tests).
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { UserFacingError } from '../errors/index.ts';

const LOCK_FILE = 'validic-sync.pid';

/** Opens held by this process, per lock file. */
const held = new Map<string, number>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the folder's lock for this process; returns its release. Throws when another process holds it. */
export function lockEmbeddedWarehouse(dataDir: string): () => void {
  const file = join(dataDir, LOCK_FILE);
  const release = () => {
    const count = (held.get(file) ?? 1) - 1;
    if (count > 0) held.set(file, count);
    else {
      held.delete(file);
      rmSync(file, { force: true });
    }
  };
  if (held.has(file)) {
    held.set(file, held.get(file)! + 1);
    return release;
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      held.set(file, 1);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new UserFacingError(
        `the embedded warehouse in ${dataDir} is open in another process (pid ${pid}), and two at once would corrupt it`,
        {
          fix: 'stop that process (a worker, `npm run dev`, a backfill) or wait for it to end; to run commands side by side, use PostgreSQL (DATABASE_URL)',
        },
      );
    }
    // Left by a process that is gone (or by this one, killed and restarted with its pid): take it over.
    rmSync(file, { force: true });
  }
  throw new UserFacingError(`cannot take the lock of the embedded warehouse in ${dataDir}`, {
    fix: `remove ${file} if no validic-sync process uses the folder`,
  });
}
