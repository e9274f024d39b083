/**
 * The kind of platform endpoint a URL addresses: a bounded label for metrics (a path holds user ids and
 * stream ids, which must never become label values). Matched on the end of the path, since base URLs
 * may carry a prefix (a proxy, the sandbox's `/api`).
 */
export const ENDPOINT_KINDS = [
  'users',
  'records',
  'connections',
  'streams',
  'stream_connect',
  'replay',
  'legacy_latest',
  'legacy',
  'other',
] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

export function endpointKind(url: URL): EndpointKind {
  const path = url.pathname.replace(/\/+$/, '');
  if (/\/v1\//.test(path)) return /\/latest\.json$/.test(path) ? 'legacy_latest' : 'legacy';
  if (/\/streams\/[^/]+\/connect$/.test(path)) return 'stream_connect';
  if (/\/streams(\/[^/]+)?$/.test(path)) return 'streams';
  if (/\/replay$/.test(path)) return 'replay';
  if (/\/connections$/.test(path)) return 'connections';
  if (/\/users\/[^/]+\/[^/]+$/.test(path)) return 'records';
  if (/\/users(\/[^/]+)?$/.test(path)) return 'users';
  return 'other';
}
