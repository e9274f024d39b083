import { describe, expect, it } from 'vitest';
import { httpStatusOf, PermanentError, PermanentHttpError } from '../../src/errors/index.ts';
import { extractErrorMessages } from '../../src/http/responses.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const URL_ = `${ORIGIN}/organizations/o1/users/u1/measurements?token=tok-abc-999&start_date=2026-01-01`;

const mock = useMockAgent(ORIGIN);

const shapes: Array<[string, number, string, string[]]> = [
  [
    'errors array',
    401,
    '{"errors":["token not authorized to access the organization"]}',
    ['token not authorized to access the organization'],
  ],
  [
    'errors by field',
    400,
    '{"errors":{"start_date":["is invalid","is too old"]}}',
    ['start_date: is invalid', 'start_date: is too old'],
  ],
  [
    'message',
    403,
    '{"message":"invalid authentication credentials"}',
    ['invalid authentication credentials'],
  ],
  ['status + error', 400, '{"status":400,"error":"Bad Request"}', ['Bad Request']],
  ['plain text', 400, 'There was an error with your request', ['There was an error with your request']],
  ['code + message', 422, '{"code":422,"message":"Unprocessable Entity"}', ['Unprocessable Entity']],
  ['empty', 404, '', []],
];

describe('4xx answers fail at once with a PermanentHttpError', () => {
  for (const [name, status, body, messages] of shapes) {
    it(`reads messages from ${name}`, async () => {
      mock.agent
        .get(ORIGIN)
        .intercept({ path: () => true, method: 'GET' })
        .reply(status, body);
      const clock = createManualClock();
      const http = mock.http({ clock });
      const err = await http.getJson(URL_).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PermanentHttpError);
      expect(err).toBeInstanceOf(PermanentError);
      const e = err as PermanentHttpError;
      expect(e.status).toBe(status);
      expect(httpStatusOf(e)).toBe(status);
      expect(e.method).toBe('GET');
      expect(e.url).toContain('token=[REDACTED]');
      expect(e.url).not.toContain('tok-abc-999');
      expect(e.message).not.toContain('tok-abc-999');
      expect(e.messages).toEqual(messages);
      expect(e.bodyExcerpt).toBe(body);
      expect(clock.sleeps).toEqual([]);
    });
  }

  it('redacts a token echoed back in the error body', () => {
    expect(extractErrorMessages('{"message":"bad url /users?token=abcdef&x=1"}')).toEqual([
      'bad url /users?token=[REDACTED]&x=1',
    ]);
  });

  it('keeps unknown JSON shapes harmless', () => {
    expect(extractErrorMessages('[1,2]')).toEqual([]);
    expect(extractErrorMessages('{"code":"E42"}')).toEqual(['code E42']);
    expect(extractErrorMessages('{"error":{"message":"nested"}}')).toEqual(['nested']);
  });
});
