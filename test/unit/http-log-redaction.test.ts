import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const TOKEN = 'very-secret-token-42';
const mock = useMockAgent(ORIGIN);

describe('redaction', () => {
  it('never writes the token in log lines or errors', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: () => true, method: 'GET' }).reply(500, `upstream failed for token=${TOKEN}`);
    pool
      .intercept({ path: () => true, method: 'GET' })
      .replyWithError(
        Object.assign(new Error(`reset while fetching ?token=${TOKEN}`), { code: 'ECONNRESET' }),
      );
    pool.intercept({ path: () => true, method: 'GET' }).reply(200, '{"cut');
    pool
      .intercept({ path: () => true, method: 'GET' })
      .reply(401, { errors: [`token ${TOKEN} not authorized`] });

    const out = new PassThrough();
    const lines: string[] = [];
    out.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
    const logger = createLogger({ level: 'debug', destination: out });
    const http = mock.http({ logger });
    const err = await http
      .getJson(`${ORIGIN}/organizations/o/users?token=${TOKEN}&limit=1`)
      .catch((e: unknown) => e);
    logger.error({ err }, 'final failure');
    logger.flush();
    await new Promise((resolve) => setImmediate(resolve));

    const text = lines.join('');
    expect(lines.length).toBeGreaterThanOrEqual(5);
    expect(text).toContain('token=[REDACTED]');
    expect(text).not.toContain(TOKEN);
    // The 401 body echoes the token bare (no `token=`): the client masks the URL's secret values too.
    expect((err as Error).message).toContain('answered 401');
    expect((err as Error).message).not.toContain(TOKEN);
    expect(JSON.stringify(err)).not.toContain(TOKEN);
  });
});
