/** The small response helpers of the worker's listeners (node:http, no framework). */
import type { ServerResponse } from 'node:http';

export function send(
  res: ServerResponse,
  status: number,
  body: string,
  type = 'application/json; charset=utf-8',
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers });
  res.end(body);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  send(res, status, JSON.stringify(body), undefined, headers);
}

/** The path of a request target without its query and trailing slash ('/' when unparsable). */
export function requestPath(url: string | undefined): string {
  try {
    return new URL(url ?? '/', 'http://local.invalid').pathname.replace(/\/+$/, '') || '/';
  } catch {
    return '/';
  }
}
