/** Test helper: a raw SSE reader over undici `request` that parses frames from the body bytes. */
import { request } from 'undici';

export interface SseFrame {
  event: string;
  data: string;
}

export interface SseConnection {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Whole body for a non-SSE answer (an error status). */
  text: string;
  /** The next frame; rejects when the connection ends first. */
  next(): Promise<SseFrame>;
  /** The next `event: data` frame, parsed; pokes and other names are skipped and kept in `skipped`. */
  nextData<T = Record<string, unknown>>(): Promise<T>;
  skipped: SseFrame[];
  /** Frames received so far (read or not). */
  received(): number;
  /** Resolves when the server ends or drops the connection. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string): Promise<SseConnection> {
  const controller = new AbortController();
  const res = await request(url, { signal: controller.signal });
  const headers = res.headers as Record<string, string | string[] | undefined>;
  const frames: SseFrame[] = [];
  const waiters: { resolve: (f: SseFrame) => void; reject: (e: Error) => void }[] = [];
  let done = false;
  let endResolve!: () => void;
  const ended = new Promise<void>((r) => {
    endResolve = r;
  });
  const finish = (): void => {
    done = true;
    for (const w of waiters.splice(0)) w.reject(new Error('connection ended'));
    endResolve();
  };
  if (!String(headers['content-type'] ?? '').startsWith('text/event-stream')) {
    const text = await res.body.text();
    finish();
    return {
      status: res.statusCode,
      headers,
      text,
      next: () => Promise.reject(new Error('not an event stream')),
      nextData: () => Promise.reject(new Error('not an event stream')),
      skipped: [],
      received: () => 0,
      ended,
      close: () => {},
    };
  }
  let buffer = '';
  let count = 0;
  res.body.setEncoding('utf8');
  res.body.on('data', (chunk: string) => {
    buffer += chunk;
    let index = buffer.indexOf('\n\n');
    while (index >= 0) {
      const block = buffer.slice(0, index);
      buffer = buffer.slice(index + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      const frame = { event, data: data.join('\n') };
      count++;
      const waiter = waiters.shift();
      if (waiter) waiter.resolve(frame);
      else frames.push(frame);
      index = buffer.indexOf('\n\n');
    }
  });
  res.body.on('end', finish);
  res.body.on('error', finish);
  res.body.on('close', finish);
  const next = (): Promise<SseFrame> => {
    const frame = frames.shift();
    if (frame) return Promise.resolve(frame);
    if (done) return Promise.reject(new Error('connection ended'));
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
  };
  const skipped: SseFrame[] = [];
  return {
    status: res.statusCode,
    headers,
    text: '',
    next,
    skipped,
    received: () => count,
    nextData: async <T>() => {
      for (;;) {
        const frame = await next();
        if (frame.event === 'data') return JSON.parse(frame.data) as T;
        skipped.push(frame);
      }
    },
    ended,
    close: () => controller.abort(),
  };
}
