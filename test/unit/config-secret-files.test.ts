/** `NAME_FILE` variants of the secret settings (Docker/Kubernetes secrets). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { ConfigError } from '../../src/errors/index.ts';
import { redactKnownSecrets } from '../../src/redact/redact-secrets.ts';

const dir = mkdtempSync(join(tmpdir(), 'vs-secret-files-'));
const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

describe('secret files', () => {
  it('reads the token, the push secret and the database URL from files, dropping one trailing newline', () => {
    const config = loadConfig(
      {
        VALIDIC_ORG_ID: 'org-1',
        VALIDIC_TOKEN_FILE: file('token', 'tok-from-file-1\n'),
        PUSH_SECRET_FILE: file('push', 'push-secret-from-file-0123456789\n'),
        DATABASE_URL_FILE: file('db', 'postgres://app:pw-from-file@db.example/warehouse'),
      },
      { cwd: dir },
    );
    expect(config.organizations[0]!.token).toBe('tok-from-file-1');
    expect(config.http.pushSecret).toBe('push-secret-from-file-0123456789');
    expect(config.databaseUrl).toBe('postgres://app:pw-from-file@db.example/warehouse');
    // Registered for redaction like a secret from the environment.
    expect(redactKnownSecrets('x tok-from-file-1 y')).not.toContain('tok-from-file-1');
  });

  it('names the setting and the fix for a missing file, an empty one, or both forms at once', () => {
    let problems: string[] = [];
    try {
      loadConfig(
        {
          VALIDIC_ORG_ID: 'org-1',
          VALIDIC_TOKEN_FILE: join(dir, 'missing'),
          PUSH_SECRET_FILE: file('empty', '\n'),
          DATABASE_URL: 'postgres://a@b/c',
          DATABASE_URL_FILE: file('db2', 'postgres://x@y/z'),
        },
        { cwd: dir },
      );
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      problems = (error as ConfigError).problems.map((p) => `${p.key}: ${p.message} | ${p.fix}`);
    }
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^VALIDIC_TOKEN_FILE: cannot read .*missing \(ENOENT\) \| point VALIDIC_TOKEN_FILE/,
        ),
        expect.stringMatching(/^PUSH_SECRET_FILE: .*empty is empty/),
        'DATABASE_URL_FILE: is set together with DATABASE_URL | set either DATABASE_URL or DATABASE_URL_FILE, not both',
      ]),
    );
  });
});
