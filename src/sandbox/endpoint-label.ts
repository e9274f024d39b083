/** Statistics key of a request: method plus path with ids replaced (`GET /organizations/:org/users`). */
import { LEGACY_OBJECTS } from './types.ts';

const OBJECTS = new Set<string>(LEGACY_OBJECTS);

export function endpointLabel(method: string, path: string): string {
  const segments = path.split('/').filter(Boolean);
  const legacy = segments[0] === 'v1';
  const out = segments.map((segment, i) => {
    const prev = segments[i - 1];
    const ext = segment.endsWith('.json') ? '.json' : '';
    if (prev === 'organizations') return `:org${ext}`;
    if (prev === 'users') return `:uid${ext}`;
    if (prev === 'streams') return ':id';
    if (legacy && prev !== undefined && OBJECTS.has(prev) && segment !== 'latest.json') return `:id${ext}`;
    return segment;
  });
  return `${method} /${out.join('/')}`;
}
