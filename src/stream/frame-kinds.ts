/**
 * What a frame means, as pure functions: data (one JSON object, its numbers read exactly), poke, bad (not
 * JSON, not an object, too large), or another event name.
 */
import { parseJsonExactly } from '../pipeline/exact-json.ts';
import type { ClassifiedFrame, SseFrame } from './types.ts';

/**
 * What a frame means, as a pure function. `data` frames carry one JSON record or connection event;
 * a `data` frame that is not a JSON object is `bad` (quarantined by the caller with its text, never an
 * exception). `poke` frames are liveness only, so an unparseable poke is still a poke. Any other event
 * name (`rule`, `connection`, `message`, …) is `other`: counted and logged, never a crash.
 */
export function classifyFrame(frame: SseFrame): ClassifiedFrame {
  if (frame.type === 'oversized') {
    return {
      kind: 'bad',
      event: frame.event,
      text: frame.excerpt,
      reason: `SSE frame larger than ${frame.maxFrameBytes} bytes (at least ${frame.bytes}); only its first bytes are kept`,
    };
  }
  if (frame.event === 'data') {
    let payload: unknown;
    try {
      // Numbers exactly as sent: records are stored as the platform sent them.
      payload = parseJsonExactly(frame.data);
    } catch (error) {
      return {
        kind: 'bad',
        event: frame.event,
        text: frame.data,
        reason: `data frame is not valid JSON: ${(error as Error).message}`,
      };
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      return { kind: 'bad', event: frame.event, text: frame.data, reason: 'data frame is not a JSON object' };
    }
    const createdAt = extractCreatedAt(payload);
    return {
      kind: 'data',
      payload,
      createdAt,
      createdAtMs: createdAt === undefined ? undefined : Date.parse(createdAt),
    };
  }
  if (frame.event === 'poke') {
    let payload: unknown = frame.data;
    try {
      payload = JSON.parse(frame.data);
    } catch {
      // A poke's body is informational (members count); its arrival is what matters.
    }
    const ts = (payload as { ts?: unknown } | null)?.ts;
    const tsMs = typeof ts === 'string' ? Date.parse(ts) : Number.NaN;
    return { kind: 'poke', payload, tsMs: Number.isNaN(tsMs) ? undefined : tsMs };
  }
  return { kind: 'other', event: frame.event, data: frame.data };
}

/** `payload.created_at` when it is a string that parses as a time; otherwise undefined. */
export function extractCreatedAt(payload: unknown): string | undefined {
  if (payload === null || typeof payload !== 'object') return undefined;
  const value = (payload as { created_at?: unknown }).created_at;
  if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) return undefined;
  return value;
}
