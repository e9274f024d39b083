/**
 * The platform's requests and answers, below the clients: URLs built with the token where the platform
 * wants it, the envelopes its answers come in, and what a 422 on a stream connect means.
 */

import { z } from 'zod';
import { UnexpectedResponseError, UnsafePathSegmentError } from '../errors/index.ts';
import { isJsonNumberText } from '../pipeline/exact-json.ts';
import { pathSegmentProblem, STREAM_RECORD_TYPES } from './platform-limits.ts';

/**
 * Builds request URLs with the URL API. Base URLs may carry a path prefix (`http://127.0.0.1:9/api`):
 * the prefix is kept and path segments are appended, each percent-encoded (a uid may hold `/` or `?`).
 * A segment that encoding cannot keep in its place (empty, `.`, `..`, control characters; see
 * platform-limits.ts) throws `UnsafePathSegmentError` instead of addressing another endpoint.
 */
export type QueryValue = string | number | boolean | undefined | null;

export function buildUrl(
  base: string,
  segments: readonly string[],
  query: Record<string, QueryValue> = {},
): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch (cause) {
    throw new TypeError(
      `invalid base URL ${JSON.stringify(base)}: expected e.g. https://api.v2.validic.com`,
      {
        cause,
      },
    );
  }
  for (const segment of segments) {
    const problem = pathSegmentProblem(segment);
    if (problem) throw new UnsafePathSegmentError(segment, problem);
  }
  const prefix = url.pathname.replace(/\/+$/, '');
  url.pathname = `${prefix}/${segments.map((s) => encodeURIComponent(s)).join('/')}`;
  url.hash = '';
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
  }
  return url;
}

/**
 * Loose, envelope-level validation of platform answers. Only the envelope is checked (is `data` an array
 * of objects?); the records themselves are returned as the very objects parsed from JSON, untouched,
 * because normalization validates them (and quarantines bad ones) later.
 */
export type RawObject = Record<string, unknown>;

export const rawObject = z.custom<RawObject>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { message: 'expected a JSON object' },
);

export function parseEnvelope<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body);
  if (!result.success) {
    const issues = result.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new UnexpectedResponseError(what, issues);
  }
  return result.data;
}

/**
 * A list answer: `{ data: [...] , meta? }`, or past the end `{}` / `{ data: [] }`. A bare array is
 * tolerated too. `key` names the list field for other envelopes (`connections`, `streams`).
 *
 * Elements that are not objects (`null`, `7`, a string) do not fail the page: a bad element is the
 * loader's to quarantine with a reason, and failing the page would keep its good records out forever
 * (the same answer comes back on every retry). They are returned apart, as `rejected`.
 */
export function listItems(
  body: unknown,
  key: string,
  what: string,
): { items: RawObject[]; rejected: unknown[]; meta: RawObject | undefined } {
  if (Array.isArray(body)) return { ...splitElements(body), meta: undefined };
  const envelope = parseEnvelope(rawObject, body, what);
  const metaResult = rawObject.safeParse(envelope.meta);
  const meta = metaResult.success ? metaResult.data : undefined;
  const raw = envelope[key] ?? (key !== 'data' ? envelope.data : undefined);
  if (raw === undefined || raw === null) return { items: [], rejected: [], meta };
  return { ...splitElements(parseEnvelope(z.array(z.unknown()), raw, `${what} (${key})`)), meta };
}

function splitElements(elements: unknown[]): { items: RawObject[]; rejected: unknown[] } {
  const items: RawObject[] = [];
  const rejected: unknown[] = [];
  for (const element of elements) {
    if (rawObject.safeParse(element).success) items.push(element as RawObject);
    else rejected.push(element);
  }
  return { items, rejected };
}

/** Identity of a page (for "the server sent the same page again" detection). */
export function pageSignature(items: readonly RawObject[]): string {
  return items
    .map((item) => {
      const key = item.id ?? item.uid ?? item._id;
      // JSON.stringify, not String: an id parsed exactly (src/pipeline/exact-json.ts) is an object.
      return typeof key === 'string' ? key : JSON.stringify(key ?? item);
    })
    .join('\u0000');
}

/** A number of an envelope (`meta.limit`, `summary.results`), also one given as a string or kept as text. */
export function numberField(obj: RawObject | undefined, key: string): number | undefined {
  const value = obj?.[key];
  const n =
    typeof value === 'string' ? Number(value) : isJsonNumberText(value) ? Number(value.rawJSON) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
}

/**
 * What a 422 from the streams API means, read from its body. The platform answers
 * 422 for several unrelated reasons: a sixth stream (at most 5 per customer), a filter naming a type it
 * does not stream, too many client connections to one stream (at most 3; also seen briefly while the
 * server rebalances after a reconnect), or another invalid field. Each needs a different fix, so the
 * body decides, not the status alone. Pure: the callers own the HTTP (streams-client.ts for create;
 * the SSE consumer for connect).
 */
export type Stream422Reason = 'stream_limit' | 'invalid_filter' | 'connection_limit' | 'other';

export interface Stream422 {
  reason: Stream422Reason;
  /** One line for the operator: what was refused and the platform's words. */
  message: string;
  fix: string;
}

export interface Stream422Input {
  operation: 'create' | 'connect';
  streamName: string;
  /** Messages of the error body (`PermanentHttpError.messages`); may be empty. */
  messages: readonly string[];
  /** Streams per customer (5). */
  maxStreams: number;
}

const CONNECTION_LIMIT =
  /\b(client )?connections?\b.*\b(max|maximum|limit|exceed)|\b(max|maximum|limit|too many)\b.*\b(client|connection)/i;
const STREAM_LIMIT =
  /\bstreams?\b.*\b(max|maximum|limit|exceed|reached)|\b(max|maximum|limit|too many)\b.*\bstreams?\b/i;
const INVALID_FILTER = /filter|resource|event_type|unknown type|invalid type/i;

/** Which 422 this is, by the body's words; `other` when they name none of the three. */
export function classifyStream422(messages: readonly string[]): Stream422Reason {
  const text = messages.join(' | ');
  if (CONNECTION_LIMIT.test(text)) return 'connection_limit';
  if (INVALID_FILTER.test(text)) return 'invalid_filter';
  if (STREAM_LIMIT.test(text)) return 'stream_limit';
  return 'other';
}

export function describeStream422(
  input: Stream422Input,
  reason = classifyStream422(input.messages),
): Stream422 {
  const { operation, streamName, messages, maxStreams } = input;
  const said = messages.length > 0 ? `: ${messages.join('; ')}` : ' (no message in the body)';
  const what =
    operation === 'create'
      ? `cannot create stream "${streamName}"`
      : `cannot connect to stream "${streamName}"`;
  switch (reason) {
    case 'stream_limit':
      return {
        reason,
        message: `${what}: the platform allows at most ${maxStreams} streams per customer (422${said})`,
        fix: 'delete an unused stream (GET/DELETE {streamsUrl}/streams/{id}), or set the stream name in the config to one of the existing streams',
      };
    case 'invalid_filter':
      return {
        reason,
        message: `${what}: the platform refused the stream's filter (422${said})`,
        fix: `set stream.resources to record types the platform streams (${STREAM_RECORD_TYPES.join(', ')}), or leave it out for all; an existing stream keeps the filter it was created with, so delete it or use another stream name after changing the filter`,
      };
    case 'connection_limit':
      return {
        reason,
        message: `${what}: the stream already has as many client connections as the platform allows (422${said})`,
        fix: 'lower stream.connections or stop other consumers of the stream (the limit counts every process); right after a reconnect this is the server rebalancing and clears by itself',
      };
    default:
      return {
        reason,
        message: `${what}: the platform answered 422${said}`,
        fix: 'check the stream settings in the config (stream.name, stream.resources) against the message above',
      };
  }
}

/**
 * How often a listing that changed while it was paged (its count changed, a page repeated part of what
 * was read) is read again from its start before it is given up as incomplete: the job's retry, or the
 * next scheduled run, reads it later. Every pager of the platform's listings (v2 users, connections, the
 * legacy lists) holds to it.
 */
export const LISTING_REREADS = 3;
