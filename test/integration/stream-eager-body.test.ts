/**
 * `eagerBody` keeps what arrived before a drop. A server writes frames and then destroys the socket,
 * and the client reads only AFTER the drop, as the consumer does when it commits between opening a
 * connection and reading it. Through `eagerBody` every frame is read before the error. The plain body
 * (undici destroys it on "other side closed") loses them, which is why `eagerBody` exists.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/http/http-client.ts';
import type { HttpClient } from '../../src/http/http-client-types.ts';
import { eagerBody, readSseFrames } from '../../src/stream/sse-reader.ts';
import type { SseFrame } from '../../src/stream/types.ts';
import { sseFrame } from '../helpers/fixtures/index.ts';

const FRAMES = 50;

describe('eagerBody', () => {
  let server: Server;
  let url: string;
  let http: HttpClient;
  let dropped: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let body = '';
      for (let i = 0; i < FRAMES; i++) body += sseFrame('data', { id: `r${i}` });
      dropped = new Promise<void>((resolve) => {
        res.write(body, () => {
          res.socket?.destroy();
          resolve();
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    http = createHttpClient();
  });
  afterAll(async () => {
    await http.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Opens, waits until the server has dropped the connection and the client noticed, then reads. */
  async function readAfterDrop(wrap: boolean): Promise<{ frames: SseFrame[]; error: unknown }> {
    const res = await http.openEventStream(url);
    const body = wrap ? eagerBody(res.body) : res.body;
    await dropped;
    // Let the client's socket see the close (undici then destroys the plain body).
    await new Promise<void>((resolve) =>
      (res.body as unknown as NodeJS.ReadableStream).once('close', () => resolve()),
    );
    const frames: SseFrame[] = [];
    let error: unknown;
    try {
      for await (const frame of readSseFrames(body)) frames.push(frame);
    } catch (e) {
      error = e;
    }
    return { frames, error };
  }

  it('delivers every frame received before the drop, then the error', async () => {
    const { frames, error } = await readAfterDrop(true);
    expect(frames).toHaveLength(FRAMES);
    expect(frames.at(-1)).toMatchObject({ type: 'event', data: `{"id":"r${FRAMES - 1}"}` });
    expect(error).toBeInstanceOf(Error);
  });

  it('is needed: the plain body loses them', async () => {
    const { frames, error } = await readAfterDrop(false);
    expect(frames.length).toBeLessThan(FRAMES);
    expect(error).toBeInstanceOf(Error);
  });
});
