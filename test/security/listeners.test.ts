/**
 * The worker's two listeners, as an attacker on the network meets them:
 * - slow-loris: a connection that sends a header line and then stalls, or trickles header lines, or
 *   trickles a body, is cut by the server (408, then closed), on both listeners;
 * - the push listener answers the push path alone (404 elsewhere); the admin listener does not answer it;
 *   with push not configured there is no push listener at all (the real `startWorker` wiring);
 * - every response carries `X-Content-Type-Options: nosniff` and `Cache-Control: no-store`;
 * - a body over the limit gets 413, whether its length is declared or it comes chunked, and the handler
 *   never sees it complete;
 * - connections over `maxConnections` are dropped, those of one address over `maxConnectionsPerAddress`
 *   too (another address is still served), and each refusal or mid-request cut is reported: with 300
 *   slow sockets from one address, the provider's push from another is answered 202 and the refusals
 *   are a refused minute of every org;
 * - a port that cannot be bound is a user-facing error.
 * No wall-time assertions: the tests wait on the socket's close event and check what the server sent.
 */
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { UserFacingError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { pushConfigured } from '../../src/push/push-admission.ts';
import { pushDepsFromConfig } from '../../src/push/push-deps.ts';
import {
  type RunningServer,
  type ServerLimits,
  serverLimits,
  startHardenedServer,
} from '../../src/server/hardened-server.ts';
import { handlePushRequest, pushListenerRefusals, startPushServer } from '../../src/server/push-server.ts';
import { startWorkerServer } from '../../src/server/worker-server.ts';
import { startWorker } from '../../src/worker/start-worker.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { createTestRedis, TEST_REDIS_URL, type TestRedis } from '../helpers/redis.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const LIMITS: ServerLimits = {
  requestTimeoutMs: 600,
  headersTimeoutMs: 300,
  keepAliveTimeoutMs: 200,
  maxConnections: 50,
  maxBodyBytes: 1024,
};
const PUSH_PATH = '/push/v1';
const SECRET = 'listeners-push-secret-0123456789';

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

interface Closed {
  /** What the server sent before the connection closed. */
  received: string;
  /** The server reset the connection (closing over unread bytes does that). */
  reset: boolean;
}

/** A raw connection the client never closes: `closed` resolves when the server cuts it. */
async function rawConnection(
  server: RunningServer,
  localAddress?: string,
): Promise<{ socket: Socket; closed: Promise<Closed> }> {
  // Linux routes all of 127.0.0.0/8 to loopback: another local address is another client address.
  const socket = connect({ port: server.port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
  let received = '';
  let reset = false;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    reset ||= error.code === 'ECONNRESET' || error.code === 'EPIPE';
  });
  const closed = new Promise<Closed>((resolve) => socket.once('close', () => resolve({ received, reset })));
  await once(socket, 'connect');
  return { socket, closed };
}

/**
 * The server answered `status` and closed, or (a client still writing when node closes the socket may
 * lose the answer to the reset) reset the connection without an answer that reached us.
 */
function expectCut({ received, reset }: Closed, status: number): void {
  if (received === '') expect(reset, 'closed without an answer or a reset').toBe(true);
  else expect(received).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
}

/** Writes `line` every few ms until the connection closes. */
function trickle(socket: Socket, line: string): void {
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(line);
  }, 40);
  socket.once('close', () => clearInterval(timer));
}

describe('the admin and push listeners', () => {
  let admin: RunningServer;
  let push: RunningServer;
  /** Bodies the stand-in push handler read to the end. */
  const completed: number[] = [];

  beforeAll(async () => {
    admin = await startWorkerServer({
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: LIMITS,
      readiness: [{ name: 'postgres', check: async () => {} }],
      metrics: { text: async () => 'up 1\n', contentType: 'text/plain' },
      // A stand-in for bull-board (test/integration/server-worker.test.ts runs the real one).
      dashboard: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><title>queues</title>');
      },
    });
    push = await startPushServer({
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: LIMITS,
      push: {
        path: PUSH_PATH,
        // A stand-in that reads the whole body (the real handler is wired in the startWorker test below).
        handle: async (req, res) => {
          const body = await readBody(req);
          completed.push(body.length);
          res
            .writeHead(202, { 'content-type': 'application/json' })
            .end(JSON.stringify({ bytes: body.length }));
        },
      },
    });
  });
  afterAll(async () => {
    await admin?.close();
    await push?.close();
  });

  describe.each([
    ['admin', () => admin, '/healthz'],
    ['push', () => push, PUSH_PATH],
  ] as const)('slow-loris on the %s listener', (_name, server, path) => {
    it('cuts a connection that sends one header line and stalls', async () => {
      const { socket, closed } = await rawConnection(server());
      socket.write(`GET ${path} HTTP/1.1\r\n`);
      expectCut(await closed, 408);
    });

    it('cuts a connection that trickles header lines forever', async () => {
      const { socket, closed } = await rawConnection(server());
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n`);
      trickle(socket, 'X-Slow: 1\r\n');
      expectCut(await closed, 408);
    });

    it('cuts a connection that opens and says nothing', async () => {
      const { closed } = await rawConnection(server());
      expectCut(await closed, 408);
    });
  });

  it('cuts a push request whose body trickles (request timeout)', async () => {
    const { socket, closed } = await rawConnection(push);
    socket.write(`POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n`);
    trickle(socket, 'x');
    expectCut(await closed, 408);
    expect(completed).not.toContain(1000);
  });

  it('the push listener answers the push path only', async () => {
    const ok = await fetch(`${push.url}${PUSH_PATH}`, { method: 'POST', body: '{}' });
    expect(ok.status).toBe(202);
    expect((await fetch(`${push.url}${PUSH_PATH}/?secret=x`, { method: 'POST', body: '{}' })).status).toBe(
      202,
    );
    for (const path of [
      '/',
      '/healthz',
      '/readyz',
      '/metrics',
      '/queues',
      '/push',
      '/push/v1/x',
      '/push/v10',
    ]) {
      const res = await fetch(`${push.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(await res.json(), path).toEqual({ error: 'not found' });
    }
  });

  it('the admin listener does not answer the push path', async () => {
    expect((await fetch(`${admin.url}/healthz`)).status).toBe(200);
    for (const method of ['GET', 'POST']) {
      const res = await fetch(`${admin.url}${PUSH_PATH}`, method === 'POST' ? { method, body: '{}' } : {});
      expect(res.status, method).toBe(404);
    }
  });

  it('sets nosniff and no-store on every response of both listeners', async () => {
    const responses = await Promise.all([
      fetch(`${admin.url}/healthz`),
      fetch(`${admin.url}/readyz`),
      fetch(`${admin.url}/metrics`),
      fetch(`${admin.url}/queues`, { headers: { accept: 'text/html' } }),
      fetch(`${admin.url}/nope`),
      fetch(`${admin.url}/healthz`, { method: 'DELETE' }),
      fetch(`${admin.url}/healthz`, { method: 'POST', body: 'x'.repeat(5000) }),
      fetch(`${push.url}${PUSH_PATH}`, { method: 'POST', body: '{}' }),
      fetch(`${push.url}/metrics`),
      fetch(`${push.url}${PUSH_PATH}`, { method: 'POST', body: 'x'.repeat(5000) }),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 404, 405, 413, 202, 404, 413]);
    for (const res of responses) {
      expect(res.headers.get('x-content-type-options'), res.url).toBe('nosniff');
      expect(res.headers.get('cache-control'), res.url).toBe('no-store');
    }
  });

  it('answers 413 to a declared body over the limit, before any handler runs', async () => {
    const before = completed.length;
    const res = await fetch(`${push.url}${PUSH_PATH}`, {
      method: 'POST',
      body: 'x'.repeat(LIMITS.maxBodyBytes + 1),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: `body larger than ${LIMITS.maxBodyBytes} bytes` });
    expect(completed.length).toBe(before);
    const atLimit = await fetch(`${push.url}${PUSH_PATH}`, {
      method: 'POST',
      body: 'x'.repeat(LIMITS.maxBodyBytes),
    });
    expect(await atLimit.json()).toEqual({ bytes: LIMITS.maxBodyBytes });
  });

  it('answers 413 to a chunked body once it passes the limit; the handler never sees it complete', async () => {
    const before = [...completed];
    const { socket, closed } = await rawConnection(push);
    const chunk = 'y'.repeat(600);
    socket.write(`POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    // 3 × 600 bytes, each under the limit, together over it; then the end of the body.
    for (let i = 0; i < 3; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    socket.write('0\r\n\r\n');
    const { received } = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received).toMatch(/x-content-type-options: nosniff/i);
    expect(completed).toEqual(before);
  });

  it('cuts a client that goes on sending after its 413', async () => {
    const { socket, closed } = await rawConnection(push);
    socket.write(`POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    trickle(socket, `200\r\n${'z'.repeat(0x200)}\r\n`);
    expectCut(await closed, 413);
  });

  it('drops connections over maxConnections', async () => {
    const capped = await startHardenedServer({
      name: 'capped',
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: { ...LIMITS, maxConnections: 1, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 },
      fix: 'n/a',
      handle: async (_req, res) => void res.end('ok'),
    });
    try {
      const first = await rawConnection(capped);
      const dropped = once(capped.server, 'drop');
      const second = await rawConnection(capped).catch(() => undefined);
      await dropped;
      // The second was closed by the server without a byte; the first still gets answers.
      if (second) expect((await second.closed).received).toBe('');
      first.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect((await first.closed).received).toMatch(/^HTTP\/1\.1 200 [\s\S]*ok$/);
    } finally {
      await capped.close();
    }
  });

  it('caps the connections of one address, serves other addresses, and reports each refusal', async () => {
    const refusals: string[] = [];
    const capped = await startHardenedServer({
      name: 'capped',
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: { ...LIMITS, maxConnectionsPerAddress: 2, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 },
      fix: 'n/a',
      handle: async (_req, res) => void res.end('ok'),
      onRefused: (refusal) => refusals.push(refusal),
    });
    try {
      const held = [await rawConnection(capped, '127.0.0.2'), await rawConnection(capped, '127.0.0.2')];
      const third = await rawConnection(capped, '127.0.0.2').catch(() => undefined);
      if (third) expect((await third.closed).received).toBe('');
      expect(refusals).toEqual(['address limit']);
      // Another address is served; the held ones still are too.
      const other = await rawConnection(capped, '127.0.0.1');
      other.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect((await other.closed).received).toMatch(/^HTTP\/1\.1 200 [\s\S]*ok$/);
      held[0]!.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect((await held[0]!.closed).received).toMatch(/^HTTP\/1\.1 200 /);
      // A closed connection frees its place.
      const again = await rawConnection(capped, '127.0.0.2');
      again.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect((await again.closed).received).toMatch(/^HTTP\/1\.1 200 /);
      held[1]!.socket.destroy();
    } finally {
      await capped.close();
    }
  });

  it('reports a request cut by its timeout, but not a connection that never said anything', async () => {
    const refusals: string[] = [];
    const timed = await startHardenedServer({
      name: 'timed',
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: LIMITS,
      fix: 'n/a',
      handle: async (_req, res) => void res.end('ok'),
      onRefused: (refusal) => refusals.push(refusal),
    });
    try {
      const silent = await rawConnection(timed);
      expectCut(await silent.closed, 408);
      expect(refusals).toEqual([]);
      const slow = await rawConnection(timed);
      slow.socket.write(`POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\n`);
      expectCut(await slow.closed, 408);
      expect(refusals).toEqual(['timeout']);
      const big = await fetch(`${timed.url}/`, { method: 'POST', body: 'x'.repeat(LIMITS.maxBodyBytes + 1) });
      expect(big.status).toBe(413);
      expect(refusals).toEqual(['timeout', 'body too large']);
    } finally {
      await timed.close();
    }
  });

  it('says which setting to change when a port is taken', async () => {
    const error = await startPushServer({
      host: '127.0.0.1',
      port: admin.port,
      log: silentLogger,
      limits: LIMITS,
      push: { path: PUSH_PATH, handle: async () => {} },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserFacingError);
    expect((error as Error).message).toContain('EADDRINUSE');
    expect((error as UserFacingError).fix).toContain('PUSH_PORT');
  });
});

describe('300 slow sockets from one address', () => {
  let db: TestDatabase;
  let testRedis: TestRedis;
  let push: RunningServer | undefined;
  const APP_SECRET = 'listeners-app-secret';
  const LEGACY_TOKEN = 'listeners-legacy-token';

  beforeAll(async () => {
    db = await createTestDatabase();
    testRedis = createTestRedis('listeners-slow');
  });
  afterAll(async () => {
    await push?.close();
    await testRedis?.cleanup();
    await db?.drop();
  });

  it('leave a legitimate push answered 202 within its timeout, and are counted as refusals', async () => {
    // The worker's push listener with its default limits and its real handler.
    const config = configSchema.parse({
      databaseUrl: db.url,
      redisPrefix: testRedis.prefix.slice(0, -1),
      organizations: [
        { orgId: 'org', token: 'v2-token', legacyToken: LEGACY_TOKEN, applicationSecret: APP_SECRET },
      ],
    });
    const deps = pushDepsFromConfig({
      config,
      warehouse: db.warehouse,
      enqueue: () => true,
      redis: testRedis.connect(),
      log: silentLogger,
    });
    const limits = serverLimits(config.http, 'push');
    const refusals: string[] = [];
    const counted = pushListenerRefusals(deps);
    push = await startPushServer({
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits,
      push: {
        path: PUSH_PATH,
        handle: (req, res) => handlePushRequest(req, res, deps),
        onRefused: (refusal) => {
          refusals.push(refusal);
          counted(refusal);
        },
      },
    });
    // 300 connections from 127.0.0.2, each sending part of its headers, then a header line now and then.
    const attackers = await Promise.all(
      Array.from({ length: 300 }, () => rawConnection(push!, '127.0.0.2').catch(() => undefined)),
    );
    for (const a of attackers) {
      if (!a || a.socket.destroyed) continue;
      a.socket.on('error', () => {});
      a.socket.write(`POST ${PUSH_PATH} HTTP/1.1\r\nHost: x\r\n`);
      trickle(a.socket, 'X-Slow: 1\r\n');
    }
    // The listener holds its per-address share of them and refuses the rest.
    await waitForStep(
      'the connections over the per-address cap refused',
      () =>
        expect(refusals.filter((r) => r === 'address limit').length).toBeGreaterThanOrEqual(
          300 - limits.maxConnectionsPerAddress!,
        ),
      { timeout: 60_000, interval: 20 },
    );
    // The provider's push, from another address, with a client timeout of its own.
    const timestamp = `${new Date().toISOString().slice(0, 19)}000000000000`;
    const signature = createHmac('sha1', APP_SECRET)
      .update(`${LEGACY_TOKEN}notification${timestamp}`)
      .digest('base64');
    const response = await fetch(`${push.url}${PUSH_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-validic-timestamp': timestamp,
        'x-validic-signature': signature,
      },
      body: JSON.stringify({
        data: [{ _id: 'u1', activity_type: 'weight', activity_date: new Date().toISOString(), source: 's' }],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ status: 'queued', enqueued: 1 });
    for (const a of attackers) a?.socket.destroy();
    // The refused connections are a refused minute of every org (key "(listener)").
    await waitForStep(
      'the refused minute recorded',
      async () => {
        const rows = await sql<{ org_id: string }>`select org_id from validic_sync.push_refusals`.execute(
          db.warehouse.db,
        );
        expect(rows.rows).toEqual([{ org_id: '(listener)' }]);
      },
      { timeout: 30_000, interval: 50 },
    );
  });
});

describe('the worker wires two listeners', () => {
  let db: TestDatabase;
  let testRedis: TestRedis;

  beforeAll(async () => {
    db = await createTestDatabase();
    testRedis = createTestRedis('listeners');
  });
  afterAll(async () => {
    await testRedis?.cleanup();
    await db?.drop();
  });

  const config = (http: Record<string, unknown>) =>
    configSchema.parse({
      databaseUrl: db.url,
      redisUrl: TEST_REDIS_URL,
      redisPrefix: testRedis.prefix.slice(0, -1),
      http: { port: 0, pushPort: 0, ...http },
      worker: { streams: false },
      schedules: { enabled: false },
      organizations: [],
    });

  it('opens the push listener only with push configured; the real handler answers there alone', async () => {
    const defaults = configSchema.parse({}).http;
    expect([defaults.host, defaults.port, defaults.pushHost, defaults.pushPort]).toEqual([
      '127.0.0.1',
      3000,
      '127.0.0.1',
      3001,
    ]);

    const withoutPush = config({});
    expect(pushConfigured(withoutPush)).toBe(false);
    const plain = await startWorker(withoutPush, silentLogger, new AbortController().signal);
    try {
      expect(plain.pushServer).toBeUndefined();
      expect((await fetch(`${plain.server.url}${PUSH_PATH}`, { method: 'POST', body: '{}' })).status).toBe(
        404,
      );
    } finally {
      await plain.stop();
    }

    const withPush = config({ pushSecret: SECRET });
    expect(pushConfigured(withPush)).toBe(true);
    const worker = await startWorker(withPush, silentLogger, new AbortController().signal);
    try {
      const pushServer = worker.pushServer!;
      expect(pushServer.port).not.toBe(worker.server.port);
      const pushUrl = `${pushServer.url}${PUSH_PATH}`;
      // The real handler: the secret is checked, a body is stored and answered 202.
      expect((await fetch(pushUrl, { method: 'POST', body: '{}' })).status).toBe(401);
      const accepted = await fetch(pushUrl, {
        method: 'POST',
        headers: { 'x-validic-sync-secret': SECRET, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(accepted.status).toBe(202);
      expect(accepted.headers.get('x-content-type-options')).toBe('nosniff');
      // Admin routes are not on the push listener; the push path is not on the admin listener.
      for (const path of ['/healthz', '/readyz', '/metrics', '/queues']) {
        expect((await fetch(`${pushServer.url}${path}`)).status, path).toBe(404);
      }
      expect((await fetch(`${worker.server.url}/readyz`)).status).toBe(200);
      const onAdmin = await fetch(`${worker.server.url}${PUSH_PATH}`, {
        method: 'POST',
        headers: { 'x-validic-sync-secret': SECRET },
        body: '{}',
      });
      expect(onAdmin.status).toBe(404);
    } finally {
      await worker.stop();
    }
  });
});
