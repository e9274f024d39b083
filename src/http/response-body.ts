/**
 * Reading answers with bounded memory: a 2xx body whole, up to `maxBytes` and checked against its
 * `Content-Length`; an error body up to 64 KiB for the excerpt; a redirect body dropped.
 */
import type { Dispatcher } from 'undici';
import { BodyTooLargeError, ResponseBodyError } from '../errors/index.ts';

const MiB = 1024 * 1024;
/**
 * Largest response body, by the memory target (peak RSS ≤ 300 MB per worker, bench/README.md): a body
 * is held about four times while read and parsed (chunks, joined buffer, string, parsed objects ≈ 1.8×
 * the text), so 8 MiB costs ≈ 32 MB per request, ≈ 130 MB with the default 4 requests in flight. The
 * largest real page is far smaller: a user's 30 days of 5-minute CGM is ≈ 0.4 MB in the sandbox, a
 * month of minute-level intraday a few MB. A larger body is a `BodyTooLargeError` (permanent, clear).
 */
export const DEFAULT_MAX_BODY_BYTES = 8 * MiB;
/** Error bodies are read up to this size for the excerpt and messages; the rest is dropped. */
const ERROR_BODY_BYTES = 64 * 1024;

/** Reads a whole body, refusing more than `maxBytes`, checking Content-Length against what arrived. */
export async function readBody(
  res: Dispatcher.ResponseData,
  maxBytes: number,
  method: string,
  redactedUrl: string,
): Promise<string> {
  const declared = Number(headerValue(res.headers['content-length']) ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.body.destroy();
    throw new BodyTooLargeError(method, redactedUrl, maxBytes);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    received += buf.length;
    if (received > maxBytes) {
      res.body.destroy();
      throw new BodyTooLargeError(method, redactedUrl, maxBytes);
    }
    chunks.push(buf);
  }
  if (Number.isFinite(declared) && received !== declared) {
    throw new ResponseBodyError(
      method,
      redactedUrl,
      res.statusCode,
      `body cut off (${received} of ${declared} bytes)`,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function readErrorBody(res: Dispatcher.ResponseData): Promise<string> {
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      received += buf.length;
      if (received >= ERROR_BODY_BYTES) {
        res.body.destroy();
        break;
      }
    }
  } catch {
    // The excerpt is best effort: a cut error body still leaves the status as the signal.
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function discardBody(res: Dispatcher.ResponseData): Promise<void> {
  try {
    await res.body.dump({ limit: ERROR_BODY_BYTES });
  } catch {
    // Nothing to keep from a redirect body.
  }
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
