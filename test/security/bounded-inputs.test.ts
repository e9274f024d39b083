/**
 * Bounded inputs (issue 17, item 5), over real HTTP to a local server that records what it was asked:
 * - ids from the platform and the config that go into URL paths (`..`, `a/b`, `%2e%2e`, control
 *   characters) never address another endpoint: encoded into one segment, or refused; a bad user uid
 *   is quarantined with its reason, a bad push id is reported, a bad stream id is left out;
 * - `Retry-After` is capped (MAX_RETRY_AFTER_MS), in seconds and as an HTTP date;
 * - response bodies and SSE frames are bounded at the defaults the worker runs with (sized by the
 *   300 MB memory target): a larger one is a clear error or a quarantined item, memory stays bounded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { DEFAULT_STREAM_CONSUMER_OPTIONS } from '../../src/config/stream-options.ts';
import {
  BodyTooLargeError,
  ConfigError,
  PermanentError,
  RateLimitedError,
  UnsafePathSegmentError,
} from '../../src/errors/index.ts';
import { createHttpClient } from '../../src/http/http-client.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/http/responses.ts';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../src/http/retry-policy.ts';
import { createLegacyClient } from '../../src/legacy/legacy-client.ts';
import { extractPushItems } from '../../src/push/push-items.ts';
import { classifyFrame } from '../../src/stream/frame-kinds.ts';
import { readSseFrames } from '../../src/stream/sse-reader.ts';
import { buildUrl } from '../../src/validic/requests.ts';
import { createStreamsClient } from '../../src/validic/streams-client.ts';
import { createV2Client } from '../../src/validic/v2-client.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { endlessAnswer } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const MiB = 1024 * 1024;
const BAD_IDS = ['..', '.', '', 'a\u0000b', 'tab\there', 'esc\u001b[2J', 'c1\u009b', 'x'.repeat(1025)];
/** Ids that are fine once each is encoded as one segment. */
const ENCODED_IDS: Record<string, string> = {
  'a/b': 'a%2Fb',
  '%2e%2e': '%252e%252e',
  '.%2e': '.%252e',
  '../x': '..%2Fx',
  '...': '...',
  'ü ?#': '%C3%BC%20%3F%23',
};

/** A local HTTP server that records every raw request path and lets a test choose the answer. */
function recordingServer(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(req.url!.split('?')[0]!);
    res.on('error', () => {});
    answer(req, res);
  });
  return {
    paths,
    async start(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    },
    async stop(): Promise<void> {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('ids in URL paths', () => {
  const platform = recordingServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url!.startsWith('/streams?')) {
      res.end(
        JSON.stringify({
          streams: [
            { id: '..', name: 'dot' },
            { id: 'ctl\u0007', name: 'bell' },
            { id: 's1', name: 'ok' },
          ],
        }),
      );
    } else if (req.url!.startsWith('/streams/s1?')) res.end(JSON.stringify({ id: '..', name: 'renamed' }));
    else res.end('{}');
  });
  let base: string;
  const http = createHttpClient({ maxAttempts: 1 });
  beforeAll(async () => {
    base = await platform.start();
  });
  afterAll(async () => {
    await http.close();
    await platform.stop();
  });

  it('refuses dot-segments, empty ids, control characters and absurd lengths before any request', async () => {
    const v2 = createV2Client({ http, apiUrl: `${base}/v2`, orgId: 'org', token: 't' });
    const legacy = createLegacyClient({ http, legacyUrl: base, orgId: 'org', accessToken: 't' });
    const range = { startDate: '2026-01-01T00:00:00Z', endDate: '2026-01-02T00:00:00Z' };
    platform.paths.length = 0;
    for (const id of BAD_IDS) {
      await expect(v2.getUser(id), JSON.stringify(id)).rejects.toBeInstanceOf(UnsafePathSegmentError);
      await expect(
        v2.fetchRecords({
          uid: id,
          resource: 'measurements',
          startDate: '2026-01-01',
          endDate: '2026-01-02',
        }),
      ).rejects.toBeInstanceOf(PermanentError);
      expect(() => legacy.pageUserLatest(id, 'routine', range)).toThrow(
        /refused to put .* in a URL path: it /,
      );
    }
    expect(platform.paths).toEqual([]);
    expect(() => buildUrl(base, ['users', '..'])).toThrow(/in a URL path: it is the dot-segment "\.\."/);
  });

  it('keeps every other id inside its own segment, as the server sees the path', async () => {
    const v2 = createV2Client({ http, apiUrl: `${base}/v2`, orgId: 'org', token: 't' });
    platform.paths.length = 0;
    for (const id of Object.keys(ENCODED_IDS)) await v2.getUser(id);
    expect(platform.paths).toEqual(Object.values(ENCODED_IDS).map((e) => `/v2/organizations/org/users/${e}`));
  });

  it('leaves out listed streams whose id is unusable, and refuses such an id in a single answer', async () => {
    const streams = createStreamsClient({ http, streamsUrl: base, token: 't' });
    expect((await streams.listStreams()).map((s) => s.id)).toEqual(['s1']);
    await expect(streams.getStream('s1')).rejects.toThrow(
      /a stream id that cannot be used in a URL path \(it is the dot-segment "\.\."\)/,
    );
    expect(() => streams.connectUrl('..')).toThrow(UnsafePathSegmentError);
  });

  it('refuses an organization id from the config that is not one path segment (exit 2, names the key)', () => {
    for (const orgId of ['..', 'a\u0001b']) {
      const error = (() => {
        try {
          loadConfig({ VALIDIC_ORG_ID: orgId, VALIDIC_TOKEN: 'tok-123456' }, { cwd: '/nonexistent' });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(/VALIDIC_ORG_ID.*cannot be used in a URL path/);
    }
    const legacy = (() => {
      try {
        loadConfig(
          { VALIDIC_ORG_ID: 'o', VALIDIC_TOKEN: 'tok-123456', VALIDIC_LEGACY_ORG_ID: '.' },
          { cwd: '/nonexistent' },
        );
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect((legacy as Error).message).toMatch(/VALIDIC_LEGACY_ORG_ID.*dot-segment/);
  });

  it('leaves out a push item whose record or user id is unusable, with the reason', () => {
    const { items, problems } = extractPushItems({
      notifications: [
        { object: 'routine', _id: '..', user_id: 'u1' },
        { object: 'routine', _id: 'r1', user_id: '.' },
        { object: 'routine', _id: 'r2', user: { _id: 'u\u0000' } },
        { object: 'routine', _id: 'r3', user_id: 'a/b' },
      ],
    });
    expect(items).toEqual([{ object: 'routine', recordId: 'r3', userId: 'a/b' }]);
    expect(problems).toEqual([
      'item 0: the record id ".." cannot be used in a URL path: it is the dot-segment ".."',
      'item 1: the user id "." cannot be used in a URL path: it is the dot-segment "."',
      'item 2: the user id "u\\u0000" cannot be used in a URL path: it holds control characters',
    ]);
  });
});

describe('a user whose uid cannot be a path segment', () => {
  const db = useTestDatabase();

  it('is quarantined with the reason; the others land', async () => {
    const uids = ['ok-1', 'a/b', '%2e%2e', '..', '.', 'bell\u0007'];
    const result = await applyBatch(db.warehouse, {
      orgId: 'bounded-org',
      arrivedVia: 'poll',
      items: uids.map((uid) => ({ kind: 'user' as const, raw: { id: `id-${uid}`, uid } })),
    });
    expect(result.quarantined).toBe(3);
    const users = await sql<{ uid: string }>`select uid from validic.users order by uid`.execute(
      db.warehouse.db,
    );
    expect(users.rows.map((r) => r.uid)).toEqual(['%2e%2e', 'a/b', 'ok-1']);
    const reasons = await sql<{ reason: string }>`
      select reason from validic_sync.quarantine where org_id = 'bounded-org' order by reason`.execute(
      db.warehouse.db,
    );
    expect(reasons.rows.map((r) => r.reason)).toEqual([
      'invalid user: uid: cannot be used in a URL path: it holds control characters',
      'invalid user: uid: cannot be used in a URL path: it is the dot-segment "."',
      'invalid user: uid: cannot be used in a URL path: it is the dot-segment ".."',
    ]);
  });
});

describe('Retry-After is capped', () => {
  const now = Date.parse('2026-03-01T00:00:00Z');

  it('reads seconds and HTTP dates, never more than MAX_RETRY_AFTER_MS', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(3_600_000);
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('31536000', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('9'.repeat(400), now)).toBe(MAX_RETRY_AFTER_MS); // Infinity once parsed
    expect(parseRetryAfter('Sun, 01 Mar 2026 00:10:00 GMT', now)).toBe(600_000);
    expect(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });

  it('hands a capped wait to the queue when a real 429 asks for ten years', async () => {
    const limited = recordingServer((_req, res) => {
      res.writeHead(429, { 'retry-after': String(10 * 365 * 86_400), 'content-type': 'application/json' });
      res.end('{"message":"slow down"}');
    });
    const base = await limited.start();
    const http = createHttpClient();
    try {
      const error = await http.getJson(`${base}/users?token=t`).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitedError);
      expect((error as RateLimitedError).retryAfterMs).toBe(MAX_RETRY_AFTER_MS);
      expect(limited.paths).toHaveLength(1);
    } finally {
      await http.close();
      await limited.stop();
    }
  });
});

describe('bodies and frames at the defaults the worker runs with', () => {
  let bytesSent = 0;
  const TOTAL = 128 * MiB;
  // Answers with no Content-Length that would go on for 128 MiB: the limit must stop the reading.
  const endless = recordingServer(
    endlessAnswer(TOTAL, (bytes) => {
      bytesSent += bytes;
    }),
  );
  let base: string;
  beforeAll(async () => {
    base = await endless.start();
  });
  afterAll(async () => {
    await endless.stop();
  });

  it('refuses a body over DEFAULT_MAX_BODY_BYTES (8 MiB) with a clear error, memory bounded', async () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(8 * MiB);
    const http = createHttpClient();
    bytesSent = 0;
    const heapBefore = process.memoryUsage().heapUsed;
    const error = await http.getJson(`${base}/records?token=secret-token-value`).catch((e: unknown) => e);
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    await http.close();
    expect(error).toBeInstanceOf(BodyTooLargeError);
    expect(error).toBeInstanceOf(PermanentError); // not retried: it would be as large next time
    expect((error as Error).message).toMatch(
      /GET .*\/records\?token=\[REDACTED\] answered with a body larger than 8388608 bytes; raise the HTTP client option maxBodyBytes or ask for smaller pages/,
    );
    expect(bytesSent).toBeLessThan(TOTAL / 2);
    expect(heapGrowth).toBeLessThan(4 * DEFAULT_MAX_BODY_BYTES);
  });

  it('turns a 128 MiB SSE frame into one quarantined item at the consumer default, and reads on', async () => {
    const maxFrameBytes = DEFAULT_STREAM_CONSUMER_OPTIONS.maxFrameBytes;
    expect(maxFrameBytes).toBe(8 * MiB);
    const http = createHttpClient();
    const stream = await http.openEventStream(`${base}/sse?token=t`);
    const heapBefore = process.memoryUsage().heapUsed;
    let peak = 0;
    const kinds: string[] = [];
    const reasons: string[] = [];
    for await (const frame of readSseFrames(stream.body, { maxFrameBytes })) {
      peak = Math.max(peak, process.memoryUsage().heapUsed - heapBefore);
      const c = classifyFrame(frame);
      kinds.push(c.kind);
      if (c.kind === 'bad') reasons.push(c.reason);
    }
    stream.close();
    await http.close();
    expect(kinds).toEqual(['bad', 'data']);
    expect(reasons[0]).toMatch(
      /^SSE frame larger than 8388608 bytes \(at least \d+\); only its first bytes are kept$/,
    );
    expect(peak).toBeLessThan(4 * maxFrameBytes);
  });
});
