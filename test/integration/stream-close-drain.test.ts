/**
 * Nothing received is dropped on close (STATE-MACHINE.md, I15). The platform counts a frame as delivered
 * once it sent it; frames that reached us but sat unread in the read-ahead (up to 16 MiB) were dropped by
 * every close, clean or not: a stop right after a poke with frames queued behind it recorded no gap and
 * lost them, and a cut pass lost thousands. Here a real SSE server sends a frame, then 300 more while the
 * consumer waits on its first commit; the consumer is stopped meanwhile. Every frame must be committed,
 * and the stop (data was flowing) reported as a gap.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHttpClient } from '../../src/http/http-client.ts';
import type { HttpClient } from '../../src/http/http-client-types.ts';
import { openSse } from '../../src/stream/sse-reader.ts';
import { StreamConsumer } from '../../src/stream/stream-consumer.ts';
import type { DataFrame } from '../../src/stream/types.ts';
import type { StreamGap } from '../../src/warehouse/cursors.ts';
import { sseFrame } from '../helpers/fixtures/index.ts';

const MORE = 300;

describe('closing a connection', () => {
  let server: Server;
  let url: URL;
  let http: HttpClient;
  let response: ServerResponse | undefined;
  const connected = Promise.withResolvers<void>();

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', date: new Date().toUTCString() });
      res.write(sseFrame('data', { id: 'first', checksum: 'c', created_at: new Date().toISOString() }));
      response = res;
      connected.resolve();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/connect`);
    http = createHttpClient();
  });
  afterAll(async () => {
    await http.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('commits every frame already received, read ahead or not, and reports the stop as a gap', async () => {
    const committed: DataFrame[] = [];
    const gaps: StreamGap[] = [];
    const firstCommit = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const consumer = new StreamConsumer(
      {
        openStream: (signal) => openSse(http, url, 'token', signal),
        openReplay: () => Promise.reject(new Error('no replay here')),
        // The first commit waits: the driver reads nothing meanwhile, so what arrives queues ahead.
        commit: async (frames) => {
          if (frames.length > 0 && committed.length === 0) {
            firstCommit.resolve();
            await release.promise;
          }
          committed.push(...frames);
        },
        loadCursor: async () => ({
          lastLiveAt: new Date().toISOString(),
          newestCreatedAt: new Date(0).toISOString(),
        }),
        onGap: (gap) => {
          gaps.push(gap);
        },
      },
      { microBatch: { maxFrames: 1 }, staleAfterMs: 60_000, gapAfterMs: 3_600_000 },
    );
    const stop = new AbortController();
    const run = consumer.run(stop.signal);
    await connected.promise;
    await firstCommit.promise;
    let more = '';
    for (let i = 0; i < MORE; i++)
      more += sseFrame('data', { id: `r${i}`, checksum: 'c', created_at: new Date().toISOString() });
    await new Promise<void>((resolve) => response!.write(more, () => resolve()));
    // The bytes reached the client's read-ahead (its socket has them) before the stop.
    await vi.waitFor(() => expect(response!.socket?.bytesWritten ?? 0).toBeGreaterThan(more.length));
    await new Promise((resolve) => setTimeout(resolve, 200));
    stop.abort();
    release.resolve();
    await run;
    const ids = committed.flatMap((f) => (f.kind === 'data' ? [(f.payload as { id: string }).id] : []));
    expect(ids).toEqual(['first', ...Array.from({ length: MORE }, (_, i) => `r${i}`)]);
    expect(gaps.map((g) => g.reason)).toContain('stopped');
  });
});
