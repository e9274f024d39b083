/**
 * `classifyFailure`: the one table of errors → what a retry loop does, and its agreement with the SSE
 * consumer's `classifyOpenFailure` (so the consumer can switch to it in one line).
 */
import { describe, expect, it } from 'vitest';
import {
  BodyTooLargeError,
  classifyFailure,
  type Failure,
  HttpError,
  NetworkError,
  PermanentError,
  PermanentHttpError,
  RateLimitedError,
  RedirectRefusedError,
  ResponseBodyError,
  StreamRebalancingError,
  UnexpectedResponseError,
  UserFacingError,
} from '../../src/errors/index.ts';
import { classifyOpenFailure } from '../../src/stream/consumer-connection.ts';
import type { OpenFailureKind } from '../../src/stream/consumer-machine.ts';

const answer = {
  method: 'GET',
  url: 'https://api.example/x?token=[REDACTED]',
  bodyExcerpt: '',
  messages: [],
};
const coded = (code: string, message = code) => Object.assign(new Error(message), { code });
const cyclic = new Error('cyclic');
(cyclic as { cause?: unknown }).cause = cyclic;

const table: [string, unknown, Failure][] = [
  ['PermanentError', new PermanentError('nope'), { kind: 'permanent', unauthorized: false }],
  ['404', new PermanentHttpError({ ...answer, status: 404 }), { kind: 'permanent', unauthorized: false }],
  ['401', new PermanentHttpError({ ...answer, status: 401 }), { kind: 'permanent', unauthorized: true }],
  ['plain 403', Object.assign(new Error('x'), { status: 403 }), { kind: 'permanent', unauthorized: true }],
  [
    'retryable: false',
    Object.assign(new Error('x'), { status: 400, retryable: false }),
    { kind: 'permanent', unauthorized: false },
  ],
  ['body too large', new BodyTooLargeError('GET', 'u', 10), { kind: 'permanent', unauthorized: false }],
  [
    'redirect refused',
    new RedirectRefusedError('GET', 'u', 302, 'x'),
    { kind: 'permanent', unauthorized: false },
  ],
  ['bad envelope', new UnexpectedResponseError('v2', 'x'), { kind: 'permanent', unauthorized: false }],
  [
    '401 wrapped in a UserFacingError',
    new UserFacingError('refused', { cause: new PermanentHttpError({ ...answer, status: 401 }) }),
    { kind: 'permanent', unauthorized: true },
  ],
  [
    '429 with Retry-After',
    new RateLimitedError({ ...answer, status: 429, retryable: true }, 30_000),
    { kind: 'rate-limited', retryAfterMs: 30_000 },
  ],
  [
    '429 without',
    new RateLimitedError({ ...answer, status: 429, retryable: true }, undefined),
    { kind: 'rate-limited', retryAfterMs: undefined },
  ],
  ['stream 422', new StreamRebalancingError({ ...answer, status: 422 }), { kind: 'rebalancing' }],
  ['plain 422', Object.assign(new Error('x'), { status: 422, retryable: true }), { kind: 'rebalancing' }],
  ['503', new HttpError({ ...answer, status: 503, retryable: true }), { kind: 'retry' }],
  ['cut body', new ResponseBodyError('GET', 'u', 200, 'cut'), { kind: 'retry' }],
  ['socket closed', new NetworkError('GET', 'u', coded('UND_ERR_SOCKET')), { kind: 'retry' }],
  ['headers timeout', coded('UND_ERR_HEADERS_TIMEOUT'), { kind: 'retry' }],
  ['refused platform', new NetworkError('GET', 'u', coded('ECONNREFUSED')), { kind: 'outage' }],
  [
    'cut body of a reset connection',
    new ResponseBodyError('GET', 'u', 200, 'cut', { cause: coded('ECONNRESET') }),
    { kind: 'outage' },
  ],
  ['Postgres shutting down', coded('57P01', 'terminating connection'), { kind: 'outage' }],
  ['Postgres starting', coded('57P03', 'the database system is starting up'), { kind: 'outage' }],
  ['pg message only', new Error('Connection terminated unexpectedly'), { kind: 'outage' }],
  [
    'happy eyeballs',
    new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'connect failed'),
    { kind: 'outage' },
  ],
  [
    'deep cause',
    new Error('a', { cause: new Error('b', { cause: coded('ETIMEDOUT') }) }),
    { kind: 'outage' },
  ],
  [
    'database unreachable at start',
    new UserFacingError('Cannot reach the PostgreSQL database', { cause: coded('ECONNREFUSED') }),
    { kind: 'outage' },
  ],
  [
    'PermanentError wrapped in a plain Error (both runners fail it at once)',
    new Error('job step failed', { cause: new PermanentError('nope') }),
    { kind: 'permanent', unauthorized: false },
  ],
  // A job runner waits a name that does not resolve out (a compose service not up yet); the HTTP client
  // alone does not retry it (test/unit/http-retry.test.ts).
  ['host name not found', coded('ENOTFOUND'), { kind: 'outage' }],
  // A transaction PostgreSQL rolled back because it lost a race: run again, no attempt spent.
  ['deadlock detected', coded('40P01', 'deadlock detected'), { kind: 'conflict' }],
  [
    'serialization failure',
    coded('40001', 'could not serialize access due to concurrent update'),
    { kind: 'conflict' },
  ],
  // A lock not granted in time (the loader's lock_timeout, the month creation's NOWAIT): another
  // transaction was in the way, so run again without spending an attempt.
  ['lock timeout', coded('55P03', 'canceling statement due to lock timeout'), { kind: 'conflict' }],
  [
    'months busy (a user-facing error over a NOWAIT lock)',
    new UserFacingError('could not create the partitions of 2020-01', {
      cause: coded('55P03', 'could not obtain lock on relation "validic_partitions.records_undated"'),
    }),
    { kind: 'conflict' },
  ],
  [
    'deadlock under a job error',
    new Error('job step failed', { cause: coded('40P01', 'deadlock detected') }),
    { kind: 'conflict' },
  ],
  ['a unique violation (a bug, not a race)', coded('23505', 'duplicate key value'), { kind: 'unknown' }],
  ['a bug', new TypeError('x is not a function'), { kind: 'unknown' }],
  ['a TLS setting', coded('CERT_HAS_EXPIRED'), { kind: 'unknown' }],
  ['a string', 'boom', { kind: 'unknown' }],
  ['undefined', undefined, { kind: 'unknown' }],
  ['a cyclic chain', cyclic, { kind: 'unknown' }],
];

describe('classifyFailure', () => {
  it.each(table)('%s', (_name, error, expected) => {
    expect(classifyFailure(error)).toEqual(expected);
  });
});

describe("the stream consumer's reading of classifyFailure (classifyOpenFailure)", () => {
  const cases: [unknown, OpenFailureKind][] = [
    [Object.assign(new Error('x'), { status: 422, retryable: true }), 'rebalancing'],
    [new StreamRebalancingError({ ...answer, status: 422 }), 'rebalancing'],
    [Object.assign(new Error('x'), { status: 401 }), 'permanent'],
    [Object.assign(new Error('x'), { status: 403 }), 'permanent'],
    [new PermanentHttpError({ ...answer, status: 401 }), 'permanent'],
    [Object.assign(new Error('x'), { status: 400, retryable: false }), 'refused'],
    [new PermanentError('nope'), 'refused'],
    [new PermanentHttpError({ ...answer, status: 404 }), 'refused'],
    [Object.assign(new Error('x'), { status: 503, retryable: true }), 'retry'],
    // A 429 backs off for minutes (the hour's budget is spent), independent of the stale rule.
    [new RateLimitedError({ ...answer, status: 429, retryable: true }, 1000), 'rate-limited'],
    [new TypeError('fetch failed'), 'retry'],
    [new NetworkError('GET', 'u', coded('ECONNRESET')), 'retry'],
    [coded('40P01', 'deadlock detected'), 'retry'],
    // A redirect to another origin would carry the token away: the stream stops (a replay hands its gap
    // to REST) instead of reconnecting into the same redirect forever.
    [new RedirectRefusedError('GET', 'u', 302, 'x'), 'refused'],
  ];
  it.each(cases.map(([error, kind]) => [String((error as Error).name), error, kind]))(
    '%s',
    (_name, error, kind) => {
      expect(classifyOpenFailure(error)).toBe(kind);
    },
  );
});
