/**
 * From bytes to frames: an SSE connection opened (the server's clock from its `Date`), its body read
 * eagerly as it arrives and bounded, and turned into frames (eventsource-parser does the SSE grammar),
 * each frame bounded in size. What a frame means is frame-kinds.ts.
 */
import type { EventEmitter } from 'node:events';
import { createParser } from 'eventsource-parser';
import type { HttpClient } from '../http/http-client-types.ts';
import type { SseFrame, SseSource } from './types.ts';

/**
 * Reads an SSE response body as it arrives, keeping up to `maxBufferedBytes` queued for the consumer.
 *
 * Why: undici destroys a response body when the server closes the connection mid-response ("other
 * side closed"), and destroying a Node stream DISCARDS the bytes it had buffered but nobody had read
 * yet. The SSE reader pulls one chunk at a time and awaits commits in between, so frames that had
 * already reached us (and that the platform counts as delivered, hence never redelivers beyond its
 * last few) would be lost on every drop. Draining into our own queue as data arrives keeps them: the
 * consumer reads the queued chunks first and sees the error only after them.
 *
 * Memory stays bounded: past `maxBufferedBytes` queued, the body is paused (TCP backpressure again)
 * until the consumer catches up; only then could a drop still lose bytes, as with the plain reader.
 */

/** Default cap of bytes queued ahead of the consumer: twice the largest frame the reader keeps. */
export const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

interface ReadableLike extends EventEmitter {
  pause(): unknown;
  resume(): unknown;
  destroy(error?: Error): unknown;
}

function isReadableLike(body: unknown): body is ReadableLike {
  const b = body as Partial<ReadableLike> | null;
  return (
    typeof b?.on === 'function' &&
    typeof b.pause === 'function' &&
    typeof b.resume === 'function' &&
    typeof b.destroy === 'function'
  );
}

/**
 * A body read eagerly. `stopReceiving()` takes no more bytes from the socket (the connection is being
 * closed), and the iteration then yields the chunks already received and ends: a consumer that drains
 * it before closing keeps every frame the platform counts as delivered and that reached us. A body that
 * is not a Node stream (a test's async iterable) is returned as it is, without `stopReceiving`.
 */
export type EagerBody = AsyncIterable<Uint8Array> & { stopReceiving?: () => void };

export function eagerBody(
  body: AsyncIterable<Uint8Array>,
  maxBufferedBytes = DEFAULT_MAX_BUFFERED_BYTES,
): EagerBody {
  if (!isReadableLike(body)) return body;
  const stream = body;
  // Listening starts NOW, not when iteration starts: the consumer commits (awaits the database)
  // between opening a connection and reading it, and a drop in that window must not go unseen.
  const queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let ended = false;
  let stopped = false;
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onData = (chunk: Uint8Array | string) => {
    const bytes = typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
    queue.push(bytes);
    queuedBytes += bytes.byteLength;
    if (queuedBytes > maxBufferedBytes) stream.pause();
    notify();
  };
  const onEnd = () => {
    ended = true;
    notify();
  };
  const onError = (error: unknown) => {
    failure ??= { error };
    notify();
  };
  const detach = () => {
    stream.off('data', onData);
    stream.off('end', onEnd);
    stream.off('close', onEnd);
    stream.off('error', onError);
  };
  stream.on('data', onData);
  stream.on('end', onEnd);
  // A destroy without an error (our own abort) ends the iteration quietly.
  stream.on('close', onEnd);
  stream.on('error', onError);
  const state = stream as unknown as { destroyed?: boolean; errored?: unknown; readableEnded?: boolean };
  if (state.errored) onError(state.errored);
  else if (state.destroyed || state.readableEnded) onEnd();

  const iterator: AsyncIterator<Uint8Array> = {
    async next(): Promise<IteratorResult<Uint8Array>> {
      while (true) {
        const chunk = queue.shift();
        if (chunk !== undefined) {
          queuedBytes -= chunk.byteLength;
          if (queuedBytes <= maxBufferedBytes / 2 && !stopped) stream.resume();
          return { done: false, value: chunk };
        }
        if (stopped) {
          // What was received has been read; the connection's end (our own abort) is not a failure.
          detach();
          return { done: true, value: undefined };
        }
        if (failure) {
          detach();
          throw failure.error;
        }
        if (ended) {
          detach();
          return { done: true, value: undefined };
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
    async return(): Promise<IteratorResult<Uint8Array>> {
      detach();
      queue.length = 0;
      stream.destroy();
      return { done: true, value: undefined };
    },
  };
  return {
    [Symbol.asyncIterator]: () => iterator,
    stopReceiving() {
      if (stopped) return;
      stopped = true;
      stream.off('data', onData);
      stream.pause();
      notify();
    },
  };
}

/**
 * Opens an SSE connection of the platform (a stream's `connect`, a replay) for a `StreamConsumer`: the
 * body read eagerly (above) and the server's clock from its `Date` header.
 */
export async function openSse(
  http: Pick<HttpClient, 'openEventStream'>,
  url: URL,
  budgetKey: string,
  signal: AbortSignal,
): Promise<SseSource> {
  const res = await http.openEventStream(url, { budgetKey, signal });
  const date = res.headers.date;
  const serverTimeMs = typeof date === 'string' ? Date.parse(date) : Number.NaN;
  const body = eagerBody(res.body);
  return {
    body,
    ...(body.stopReceiving ? { stopReceiving: body.stopReceiving } : {}),
    ...(Number.isNaN(serverTimeMs) ? {} : { serverTimeMs }),
  };
}

/**
 * Turns an SSE response body (bytes) into frames, with eventsource-parser doing the SSE grammar.
 *
 * Memory stays bounded in two ways:
 * - Pull-based: the body is read only when the consumer asks for the next frame, so a slow consumer
 *   leaves bytes in the socket (TCP backpressure) rather than in our heap. At most one body chunk's
 *   worth of frames is queued here.
 * - Frame size: before bytes reach the parser, a small byte scanner finds frame boundaries (blank
 *   lines, with `\n`, `\r\n` or `\r` terminators). Once a frame passes `maxFrameBytes`, the parser is
 *   reset (dropping what it held), an `oversized` item is yielded at once, and the remaining bytes up to
 *   the next boundary are counted and discarded. The connection lives on. (The parser's own
 *   `maxBufferSize` would terminate the parser and lose the rest of the chunk, and does not bound a
 *   frame that arrives inside a single chunk.)
 *
 * Boundaries are at ASCII CR/LF bytes, which never occur inside a UTF-8 sequence, so decoding segments
 * that end at a boundary never splits a character.
 */
export const DEFAULT_MAX_FRAME_BYTES = 8 * 1024 * 1024;
const EXCERPT_BYTES = 1024;
const LF = 10;
const CR = 13;

export interface ReadSseFramesOptions {
  /** Largest frame buffered; larger ones become `oversized` items. Default 8 MiB. */
  maxFrameBytes?: number;
  /** Aborting stops the iteration (throws the signal's reason) even while waiting on a silent body. */
  signal?: AbortSignal;
  /** Clock for `receivedAt`. Default `Date.now`. */
  now?: () => number;
}

export async function* readSseFrames(
  body: AsyncIterable<Uint8Array>,
  options: ReadSseFramesOptions = {},
): AsyncGenerator<SseFrame, void, undefined> {
  for await (const frames of readSseFrameBatches(body, options)) yield* frames;
}

/**
 * The same frames grouped by the body chunk that completed them (never an empty group): a consumer
 * that also watches timers pays its per-wait cost once per chunk instead of once per frame.
 */
export async function* readSseFrameBatches(
  body: AsyncIterable<Uint8Array>,
  options: ReadSseFramesOptions = {},
): AsyncGenerator<SseFrame[], void, undefined> {
  const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const now = options.now ?? Date.now;
  const signal = options.signal;
  let queue: SseFrame[] = [];

  const parser = createParser({
    onEvent(message) {
      const frame: SseFrame = {
        type: 'event',
        event: message.event ?? 'message',
        data: message.data,
        receivedAt: now(),
      };
      if (message.id !== undefined) frame.id = message.id;
      queue.push(frame);
    },
  });
  let decoder = new TextDecoder('utf-8');

  // Scanner state, carried across chunks.
  let atLineStart = true; // the previous byte ended a line (or nothing was read yet)
  let afterCr = false; // the previous byte was CR: a LF now completes CRLF, it is not a new line
  let frameBytes = 0; // bytes of the current frame so far
  let skipping = false; // dropping an oversized frame until the next boundary
  let excerptParts: Uint8Array[] = [];
  let excerptLength = 0;

  const keepExcerpt = (segment: Uint8Array) => {
    if (excerptLength >= EXCERPT_BYTES) return;
    const part = segment.subarray(0, EXCERPT_BYTES - excerptLength);
    excerptParts.push(part.slice()); // copy: the body may reuse its buffer
    excerptLength += part.length;
  };

  const handleSegment = (segment: Uint8Array, endsFrame: boolean) => {
    if (!skipping) {
      if (frameBytes + segment.length > maxFrameBytes) {
        keepExcerpt(segment);
        const excerpt = new TextDecoder('utf-8').decode(concat(excerptParts, excerptLength));
        queue.push({
          type: 'oversized',
          event: /^event: ?(.*)$/m.exec(excerpt)?.[1]?.replace(/\r$/, ''),
          bytes: frameBytes + segment.length,
          maxFrameBytes,
          excerpt,
          receivedAt: now(),
        });
        skipping = true;
        parser.reset();
        decoder = new TextDecoder('utf-8');
      } else {
        frameBytes += segment.length;
        keepExcerpt(segment);
        parser.feed(decoder.decode(segment, { stream: !endsFrame }));
      }
    }
    if (endsFrame) {
      skipping = false;
      frameBytes = 0;
      excerptParts = [];
      excerptLength = 0;
    }
  };

  const scan = (chunk: Uint8Array) => {
    let segmentStart = 0;
    let i = 0;
    // Next CR / LF at or after i, searched again only once passed (most streams never send CR).
    let nextLf = chunk.indexOf(LF);
    let nextCr = chunk.indexOf(CR);
    while (i < chunk.length) {
      if (nextLf !== -1 && nextLf < i) nextLf = chunk.indexOf(LF, i);
      if (nextCr !== -1 && nextCr < i) nextCr = chunk.indexOf(CR, i);
      const j = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf);
      if (j === -1) {
        atLineStart = false;
        afterCr = false;
        break;
      }
      if (j > i) {
        atLineStart = false;
        afterCr = false;
      }
      const byte = chunk[j];
      i = j + 1;
      if (byte === LF && afterCr) {
        // Second half of CRLF: the same terminator as the CR before it.
        afterCr = false;
        continue;
      }
      if (atLineStart) {
        // An empty line: the frame ends here.
        handleSegment(chunk.subarray(segmentStart, i), true);
        segmentStart = i;
      } else {
        atLineStart = true;
      }
      afterCr = byte === CR;
    }
    if (segmentStart < chunk.length) handleSegment(chunk.subarray(segmentStart), false);
  };

  const iterator = body[Symbol.asyncIterator]();
  let finished = false;
  try {
    while (true) {
      signal?.throwIfAborted();
      const result = await nextOrAbort(iterator, signal);
      if (result.done) {
        finished = true;
        return; // an unterminated last frame is discarded, as the SSE spec says
      }
      scan(result.value);
      if (queue.length > 0) {
        const frames = queue;
        queue = [];
        yield frames;
      }
    }
  } finally {
    if (!finished) {
      // Not awaited: on a silent body a pending read may only settle when the caller aborts the request.
      void Promise.resolve()
        .then(() => iterator.return?.())
        .catch(() => {});
    }
  }
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function nextOrAbort<T>(
  iterator: AsyncIterator<T>,
  signal: AbortSignal | undefined,
): Promise<IteratorResult<T>> {
  const next = iterator.next();
  if (!signal) return next;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    next.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
