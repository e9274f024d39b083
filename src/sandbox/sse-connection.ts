/**
 * One open SSE response (a stream member or a replay): frame writing, pokes when idle, backpressure,
 * and the per-connection faults (drop after every K data events, a clean close after K, unknown event
 * names, silence).
 */
import type { ServerResponse } from 'node:http';
import type { CoreBase } from './core-base.ts';

export interface SseConnectionOptions {
  /** Value of `stream` in pokes. */
  streamId: string;
  /** A replay, not a stream member (its own drop fault). */
  replay?: boolean;
  members: () => { count: number; max: number };
  /** Called when a blocked connection can take frames again. */
  onDrain: () => void;
  onClose: () => void;
}

export class SseConnection {
  closed = false;
  blocked = false;
  dataSent = 0;
  private lastFrameAt = Date.now();
  private readonly timer: NodeJS.Timeout;
  private readonly core: CoreBase;
  private readonly res: ServerResponse;
  private readonly options: SseConnectionOptions;

  constructor(core: CoreBase, res: ServerResponse, options: SseConnectionOptions) {
    this.core = core;
    this.res = res;
    this.options = options;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    res.on('drain', () => {
      this.blocked = false;
      options.onDrain();
    });
    res.on('close', () => this.finish());
    const interval = core.settings.pokeIntervalMs;
    this.timer = setInterval(() => this.pokeIfIdle(interval), Math.max(10, Math.floor(interval / 2)));
  }

  /** False once the connection cannot take more frames now (blocked, dropped or closed). */
  get writable(): boolean {
    return !this.closed && !this.blocked;
  }

  sendData(json: string): void {
    if (this.closed) return;
    const faults = this.core.faults;
    if (faults.roll(faults.current.unknownEventRate)) {
      const name = this.dataSent % 2 === 0 ? 'rule' : 'connection';
      this.write(`event: ${name}\ndata: {"sandbox":"unknown event kind","name":"${name}"}\n\n`);
    }
    this.dataSent++;
    const k = this.options.replay ? faults.current.replayDropEvery : faults.current.streamDropEvery;
    if (k && this.dataSent % k === 0) {
      // Let the frame reach the socket, then drop the connection as a flaky network would.
      this.write(`event: data\ndata: ${json}\n\n`, () => this.res.socket?.destroy());
      this.finish();
      return;
    }
    this.write(`event: data\ndata: ${json}\n\n`);
    const close = faults.current.streamCloseAfter;
    // A scripted close by the server: the frame goes out, then the response ends cleanly.
    if (close && this.dataSent === close) this.close();
  }

  close(): void {
    if (!this.res.writableEnded) this.res.end();
    this.finish();
  }

  private write(frame: string, flushed?: () => void): void {
    this.lastFrameAt = Date.now();
    if (!this.res.write(frame, flushed)) this.blocked = true;
  }

  private pokeIfIdle(interval: number): void {
    if (this.closed || this.core.faults.current.silentStream) return;
    // A poke says nothing else flows: not while frames wait for a slow client (backpressure), where a
    // replay still has its backlog to send (a client counting pokes would give it up too early).
    if (this.blocked) return;
    if (Date.now() - this.lastFrameAt < interval) return;
    const poke = {
      ts: new Date(this.core.clock.now()).toISOString(),
      stream: this.options.streamId,
      members: this.options.members(),
    };
    this.write(`event: poke\ndata: ${JSON.stringify(poke)}\n\n`);
  }

  private finished = false;
  private readonly closeListeners: (() => void)[] = [];

  onClosed(listener: () => void): void {
    if (this.finished) listener();
    else this.closeListeners.push(listener);
  }

  private finish(): void {
    this.closed = true;
    clearInterval(this.timer);
    if (this.finished) return;
    this.finished = true;
    this.options.onClose();
    for (const listener of this.closeListeners) listener();
  }
}
