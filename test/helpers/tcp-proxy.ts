/**
 * A small TCP proxy (node:net) for fault tests: put it between the CLI and the platform, PostgreSQL or
 * Redis, then add latency, stall (stop forwarding, sockets stay open), reset (destroy every open
 * connection) or cut (reset and refuse new connections until `restore()`). There is no `tc netem` on
 * these machines, so this is how a test makes the network misbehave on purpose.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

export interface TcpProxyOptions {
  /** Where connections go. */
  targetHost?: string;
  targetPort: number;
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
}

export interface TcpProxyStats {
  /** Connections accepted so far. */
  accepted: number;
  /** Connections destroyed by `reset()` / `cut()`. */
  destroyed: number;
  /** Connections refused while cut. */
  refused: number;
  /** Connections open now. */
  open: number;
}

export interface TcpProxy {
  port: number;
  host: string;
  /** Delay added to every chunk in both directions, in ms (0 = none). */
  setLatency(ms: number): void;
  /** Stops forwarding: bytes are held (not lost) until `resume()`; sockets stay open. */
  stall(): void;
  /** Forwards what was held and carries on. */
  resume(): void;
  /** Destroys every open connection (both sides); new connections are accepted. */
  reset(): number;
  /** Destroys every open connection and refuses new ones until `restore()`. */
  cut(): number;
  /** Accepts connections again after `cut()`, resumes after `stall()`, and drops the latency. */
  restore(): void;
  stats(): TcpProxyStats;
  /** `url` with its host and port replaced by the proxy's. */
  rewriteUrl(url: string): string;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const targetHost = options.targetHost ?? '127.0.0.1';
  const host = '127.0.0.1';
  const pairs = new Set<Pair>();
  let latencyMs = 0;
  let stalled = false;
  let cut = false;
  const held: (() => void)[] = [];
  const stats = { accepted: 0, destroyed: 0, refused: 0 };

  // Forwarding keeps chunk order per direction: each chunk waits for the previous one's delay.
  const forward = (from: Socket, to: Socket) => {
    let chain = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      chain = chain.then(async () => {
        if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
        if (stalled) await new Promise<void>((r) => held.push(r));
        if (!to.destroyed) to.write(chunk);
      });
    });
    from.on('end', () => {
      chain = chain.then(() => {
        if (!to.destroyed) to.end();
      });
    });
  };

  const destroyAll = (): number => {
    let n = 0;
    for (const pair of pairs) {
      pair.client.resetAndDestroy();
      pair.upstream.resetAndDestroy();
      n++;
    }
    pairs.clear();
    stats.destroyed += n;
    return n;
  };

  const server: Server = createServer((client) => {
    if (cut) {
      stats.refused++;
      client.resetAndDestroy();
      return;
    }
    stats.accepted++;
    const upstream = tcpConnect({ host: targetHost, port: options.targetPort });
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('tcp proxy: no port');
  const port = address.port;

  const release = () => {
    stalled = false;
    for (const r of held.splice(0)) r();
  };

  return {
    port,
    host,
    setLatency(ms) {
      latencyMs = ms;
    },
    stall() {
      stalled = true;
    },
    resume: release,
    reset: destroyAll,
    cut() {
      cut = true;
      return destroyAll();
    },
    restore() {
      cut = false;
      latencyMs = 0;
      release();
    },
    stats: () => ({ ...stats, open: pairs.size }),
    rewriteUrl(url) {
      const parsed = new URL(url);
      parsed.hostname = host;
      parsed.port = String(port);
      return parsed.href;
    },
    async close() {
      cut = true;
      release();
      destroyAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
