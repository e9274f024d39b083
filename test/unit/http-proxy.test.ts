/**
 * HTTPS_PROXY / HTTP_PROXY / NO_PROXY: the client goes through the proxy the environment names, always
 * as a CONNECT tunnel (a forwarding proxy would see the token in the URL), and around it for NO_PROXY.
 * Real servers on loopback: a CONNECT proxy and a target.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as netConnect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/http/http-client.ts';

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

let target: Server;
let proxy: Server;
let targetPort: number;
let proxyPort: number;
const tunnels: string[] = [];
const forwarded: string[] = [];

beforeAll(async () => {
  target = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: req.url }));
  });
  proxy = createServer((req, res) => {
    // A forwarding request (absolute-form): what proxyTunnel must avoid.
    forwarded.push(req.url ?? '');
    res.writeHead(502).end();
  });
  proxy.on('connect', (req, socket, head) => {
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = netConnect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  targetPort = await listen(target);
  proxyPort = await listen(proxy);
});
afterAll(async () => {
  target.closeAllConnections();
  proxy.closeAllConnections();
  await Promise.all([new Promise((r) => target.close(r)), new Promise((r) => proxy.close(r))]);
});

const saved = { ...process.env };
afterEach(() => {
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy']) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  tunnels.length = 0;
  forwarded.length = 0;
});

describe('proxy from the environment', () => {
  it('tunnels through HTTP_PROXY, never forwarding the URL with its token', async () => {
    process.env.HTTP_PROXY = `http://127.0.0.1:${proxyPort}`;
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
    const http = createHttpClient({ maxAttempts: 1 });
    try {
      const body = await http.getJson<{ path: string }>(`http://127.0.0.1:${targetPort}/x?token=tok-proxy`);
      expect(body.path).toBe('/x?token=tok-proxy');
    } finally {
      await http.close();
    }
    expect(tunnels).toEqual([`127.0.0.1:${targetPort}`]);
    expect(forwarded).toEqual([]);
  });

  it('goes around the proxy for hosts in NO_PROXY', async () => {
    process.env.HTTP_PROXY = `http://127.0.0.1:${proxyPort}`;
    process.env.NO_PROXY = '127.0.0.1';
    const http = createHttpClient({ maxAttempts: 1 });
    try {
      await http.getJson(`http://127.0.0.1:${targetPort}/y`);
    } finally {
      await http.close();
    }
    expect(tunnels).toEqual([]);
    expect(forwarded).toEqual([]);
  });
});
