import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/errors/index.ts';
import { createLogger } from '../../src/log/logger.ts';
import { redactSecrets, redactUrl, registerSecret } from '../../src/redact/redact-secrets.ts';

function captureLogger() {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  return { log: createLogger({ destination: stream, level: 'trace' }), lines };
}

describe('secret redaction', () => {
  it('replaces token and access_token values in URLs, keeping the rest readable', () => {
    expect(redactUrl('https://api.v2.validic.com/organizations/o/users?token=abc123&limit=10')).toBe(
      'https://api.v2.validic.com/organizations/o/users?token=[REDACTED]&limit=10',
    );
    expect(redactSecrets('GET /v1/fitness.json?access_token=zzz failed')).toBe(
      'GET /v1/fitness.json?access_token=[REDACTED] failed',
    );
    expect(redactSecrets('{"access_token": "zzz", "uid": "u"}')).toBe(
      '{"access_token":"[REDACTED]", "uid": "u"}',
    );
  });

  it('never lets a token reach a log line, whatever the path it takes', async () => {
    const canary = 'canary-token-5f1e2d';
    registerSecret(canary);
    const { log, lines } = captureLogger();
    const url = `https://api.v2.validic.com/organizations/o/users?token=${canary}`;
    log.info({ url }, `fetching ${url}`);
    log.info({ nested: { deeper: [`echo ${canary}`] }, token: canary }, 'object fields');
    log.error(
      {
        err: new HttpError({
          method: 'GET',
          url,
          status: 500,
          bodyExcerpt: `server said ${canary}`,
          messages: [],
          retryable: true,
        }),
      },
      'request failed',
    );
    log.warn(new Error(`plain error with ${canary} inside`));
    log.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.length).toBe(4);
    for (const line of lines) expect(line).not.toContain(canary);
    expect(lines.join('\n')).toContain('[REDACTED]');
  });
});
