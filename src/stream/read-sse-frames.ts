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
import { createParser } from 'eventsource-parser';
import type { SseFrame } from './types.ts';

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
