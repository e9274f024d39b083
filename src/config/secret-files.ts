/**
 * `NAME_FILE` variants of the secret settings, the Docker/Kubernetes secrets convention (the postgres
 * and redis images use it too): `VALIDIC_TOKEN_FILE=/run/secrets/validic_token` reads the token from
 * that file, so the secret never sits in the process environment of a compose file or a `ps` listing.
 * One trailing newline (what `echo` and editors leave) is dropped.
 */
import { readFileSync } from 'node:fs';
import type { ConfigProblem } from '../errors/index.ts';

export const SECRET_ENV_NAMES = [
  'DATABASE_URL',
  'REDIS_URL',
  'VALIDIC_TOKEN',
  'VALIDIC_LEGACY_TOKEN',
  'VALIDIC_APPLICATION_SECRET',
  'PUSH_SECRET',
  'VALIDIC_ADMIN_TOKEN',
] as const;

/** The environment with every `NAME_FILE` read into `NAME`; problems are added for the caller to report. */
export function readSecretFiles(
  env: NodeJS.ProcessEnv,
  problems: ConfigProblem[],
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): NodeJS.ProcessEnv {
  const result = { ...env };
  for (const name of SECRET_ENV_NAMES) {
    const fileName = `${name}_FILE`;
    const path = env[fileName];
    if (!path) continue;
    if (env[name]) {
      problems.push({
        key: fileName,
        message: `is set together with ${name}`,
        fix: `set either ${name} or ${fileName}, not both`,
      });
      continue;
    }
    let value: string;
    try {
      value = read(path).replace(/\r?\n$/, '');
    } catch (error) {
      problems.push({
        key: fileName,
        message: `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
        fix: `point ${fileName} at a readable file holding the value of ${name}`,
      });
      continue;
    }
    if (!value) {
      problems.push({
        key: fileName,
        message: `${path} is empty`,
        fix: `write the value of ${name} into ${path}`,
      });
      continue;
    }
    result[name] = value;
  }
  return result;
}
