/** Test helper: a loopback HTTP server that collects the JSON bodies (and headers) POSTed to it. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  url: string;
  bodies: unknown[];
  headers: IncomingHttpHeaders[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const bodies: unknown[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      headers.push(req.headers);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    bodies,
    headers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
