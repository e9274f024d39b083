/**
 * Redaction hides secrets, not words: a secret is replaced where it sits (a URL's password field, a secret
 * query parameter, a JSON field, a header value), and a password that is also a word (`postgres`) leaves
 * that word readable everywhere else.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { REDACTED, redactKnownSecrets, redactSecrets, redactValue } from '../../src/redact/redact-secrets.ts';
import { secretValuesOf } from '../../src/redact/url-secret-values.ts';

const emptyDir = mkdtempSync(join(tmpdir(), 'vs-redact-'));

describe('redaction by position', () => {
  it('replaces the password field of a URL and keeps the scheme, the user and the word', () => {
    loadConfig(
      {
        DATABASE_URL: 'postgres://postgres:postgres@127.0.0.1:5432/warehouse',
        REDIS_URL: 'redis://:redis@127.0.0.1:6379/0',
      },
      { cwd: emptyDir },
    );
    expect(
      redactKnownSecrets(
        'Cannot reach the PostgreSQL database at postgres://postgres:postgres@127.0.0.1:5432/warehouse: refused',
      ),
    ).toBe(
      `Cannot reach the PostgreSQL database at postgres://postgres:${REDACTED}@127.0.0.1:5432/warehouse: refused`,
    );
    expect(redactKnownSecrets('refuses to run as postgres (superuser)')).toBe(
      'refuses to run as postgres (superuser)',
    );
    expect(
      redactKnownSecrets('cannot reach redis at redis://:redis@127.0.0.1:6379/0 (the redis server)'),
    ).toBe(`cannot reach redis at redis://:${REDACTED}@127.0.0.1:6379/0 (the redis server)`);
  });

  it('replaces every secret a connection string can carry', () => {
    expect(redactSecrets('postgres://postgres@127.0.0.1:1/x?password=QueryPw123')).toBe(
      `postgres://postgres@127.0.0.1:1/x?password=${REDACTED}`,
    );
    expect(redactSecrets('postgres://u@h/db?sslmode=require&sslpassword=KeyPw9&application_name=a')).toBe(
      `postgres://u@h/db?sslmode=require&sslpassword=${REDACTED}&application_name=a`,
    );
    expect(redactSecrets('host=db.internal user=loader password=Lib Pq dbname=w')).toBe(
      `host=db.internal user=loader password=${REDACTED} Pq dbname=w`,
    );
    expect(redactSecrets('https://proxy-user:Pr0xy%40pw@proxy.internal:3128')).toBe(
      `https://proxy-user:${REDACTED}@proxy.internal:3128`,
    );
    expect(redactSecrets('{"password": "hunter2", "user": "u"}')).toBe(
      `{"password":"${REDACTED}", "user": "u"}`,
    );
    expect(secretValuesOf(new URL('postgres://h/db?password=QueryPw123'))).toEqual(['QueryPw123']);
  });

  it('replaces header credentials, not the scheme word or a placeholder', () => {
    expect(redactSecrets('Authorization: Bearer abc.def-123')).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(redactSecrets('authorization=Basic dXNlcjpwYXNz')).toBe(`authorization=Basic ${REDACTED}`);
    expect(redactSecrets('{"x-validic-sync-secret":"s3cr3t","x":1}')).toBe(
      `{"x-validic-sync-secret":"${REDACTED}","x":1}`,
    );
    expect(redactSecrets('admin token required (Authorization: Bearer <token>)')).toBe(
      'admin token required (Authorization: Bearer <token>)',
    );
    expect(
      redactValue({
        headers: { Authorization: 'Bearer abc', 'X-Validic-Signature': 'sig=', accept: 'json' },
      }),
    ).toEqual({ headers: { Authorization: REDACTED, 'X-Validic-Signature': REDACTED, accept: 'json' } });
  });

  it('still replaces token parameters and the platform tokens wherever they appear', () => {
    loadConfig({ VALIDIC_ORG_ID: 'o', VALIDIC_TOKEN: 'tok_5f1e2d9a8b7c' }, { cwd: emptyDir });
    expect(
      redactKnownSecrets('GET /users?limit=1&token=anything answered 403: tok_5f1e2d9a8b7c unknown'),
    ).toBe(`GET /users?limit=1&token=${REDACTED} answered 403: ${REDACTED} unknown`);
  });
});
