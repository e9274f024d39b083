/**
 * Settings from a `.env` file in the working folder, read by Node itself (`process.loadEnvFile`, no
 * dotenv dependency). Variables already in the environment win, as the environment wins over the
 * config file. Why not the `--env-file-if-exists` launch flag: Node 24 prints ".env not found.
 * Continuing without it." on stderr for every process started without one, which every CLI run and
 * every log collector would then carry.
 */
import { existsSync } from 'node:fs';

export const ENV_FILE = '.env';

export function loadEnvFile(path = ENV_FILE): boolean {
  if (!existsSync(path)) return false;
  process.loadEnvFile(path);
  return true;
}
