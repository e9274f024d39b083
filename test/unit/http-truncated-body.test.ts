import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ResponseBodyError } from '../../src/errors/index.ts';
import { createHttpClient } from '../../src/http/http-client.ts';
import type { HttpClient } from '../../src/http/http-client-types.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';

// A real server on loopback: only a real socket can cut a body after its headers were sent.
let server: Server | undefined;
let http: HttpClient | undefined;
afterEach(async () => {
  await http?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(cutFirst: number): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const full = JSON.stringify({ data: Array.from({ length: 50 }, (_, i) => ({ uid: `user-${i}` })) });
  server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full) });
    if (hits <= cutFirst) {
      res.write(full.slice(0, 100));
      // Destroy after the partial write is flushed: the client sees a content-length mismatch.
      res.socket?.end();
      setImmediate(() => res.socket?.destroy());
      return;
    }
    res.end(full);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/users?token=cut-secret`, hits: () => hits };
}

describe('bodies cut off mid-way', () => {
  it('retries until a whole body arrives', async () => {
    const { url, hits } = await serve(2);
    http = createHttpClient({ clock: createManualClock() });
    const body = await http.getJson<{ data: unknown[] }>(url);
    expect(body.data).toHaveLength(50);
    expect(hits()).toBe(3);
  });

  it('throws ResponseBodyError (redacted) when every attempt is cut', async () => {
    const { url, hits } = await serve(100);
    http = createHttpClient({ clock: createManualClock(), maxAttempts: 3 });
    const err = await http.getJson(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseBodyError);
    expect((err as Error).message).not.toContain('cut-secret');
    expect(hits()).toBe(3);
  });
});
