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
import type { EventEmitter } from 'node:events';

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

export function eagerBody(
  body: AsyncIterable<Uint8Array>,
  maxBufferedBytes = DEFAULT_MAX_BUFFERED_BYTES,
): AsyncIterable<Uint8Array> {
  if (!isReadableLike(body)) return body;
  const stream = body;
  // Listening starts NOW, not when iteration starts: the consumer commits (awaits the database)
  // between opening a connection and reading it, and a drop in that window must not go unseen.
  const queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let ended = false;
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
          if (queuedBytes <= maxBufferedBytes / 2) stream.resume();
          return { done: false, value: chunk };
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
  return { [Symbol.asyncIterator]: () => iterator };
}
