/**
 * Opens an SSE connection of the platform (a stream's `connect`, a replay) for a `StreamConsumer`: the
 * body read eagerly (eager-body.ts) and the server's clock from its `Date` header.
 */
import type { HttpClient } from '../http/http-client-types.ts';
import { eagerBody } from './eager-body.ts';
import type { SseSource } from './types.ts';

export async function openSse(
  http: Pick<HttpClient, 'openEventStream'>,
  url: URL,
  budgetKey: string,
  signal: AbortSignal,
): Promise<SseSource> {
  const res = await http.openEventStream(url, { budgetKey, signal });
  const date = res.headers.date;
  const serverTimeMs = typeof date === 'string' ? Date.parse(date) : Number.NaN;
  return { body: eagerBody(res.body), ...(Number.isNaN(serverTimeMs) ? {} : { serverTimeMs }) };
}
