/**
 * What a 422 from the streams API means, read from its body (issue 15, item 5). The platform answers
 * 422 for several unrelated reasons: a sixth stream (at most 5 per customer), a filter naming a type it
 * does not stream, too many client connections to one stream (at most 3; also seen briefly while the
 * server rebalances after a reconnect), or another invalid field. Each needs a different fix, so the
 * body decides, not the status alone. Pure: the callers own the HTTP (streams-client.ts for create;
 * the SSE consumer for connect).
 */
import { STREAM_RECORD_TYPES } from './v2-resources.ts';

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
