import { describe, expect, it } from 'vitest';
import { buildUrl } from '../../src/validic/requests.ts';

describe('buildUrl', () => {
  it('keeps a base path prefix and encodes each segment', () => {
    const url = buildUrl('http://127.0.0.1:9/api/', ['organizations', 'org 1', 'users', 'a/b?c#d'], {
      token: 't&x',
      limit: 10,
      skip: undefined,
    });
    expect(url.pathname).toBe('/api/organizations/org%201/users/a%2Fb%3Fc%23d');
    expect(url.searchParams.get('token')).toBe('t&x');
    expect(url.searchParams.get('limit')).toBe('10');
    expect(url.searchParams.has('skip')).toBe(false);
  });

  it('works on a bare origin', () => {
    expect(buildUrl('https://api.v2.validic.com', ['streams']).href).toBe(
      'https://api.v2.validic.com/streams',
    );
  });

  it('names the fix for an invalid base URL', () => {
    expect(() => buildUrl('api.v2.validic.com', ['x'])).toThrow(/invalid base URL/);
  });
});
