/** Who may use the admin listener: the token when one is set, loopback clients otherwise. */
import { describe, expect, it } from 'vitest';
import { checkAdminAccess, credentialOf } from '../../src/server/admin-access.ts';

const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
const ask = (path: string, remoteAddress: string, authorization?: string, token?: string) =>
  checkAdminAccess({ path, remoteAddress, authorization, token }).allowed;

describe('admin access', () => {
  it('without a token serves loopback clients only (IPv4, IPv6, mapped)', () => {
    expect(ask('/metrics', '127.0.0.1')).toBe(true);
    expect(ask('/queues', '::1')).toBe(true);
    expect(ask('/metrics', '::ffff:127.0.0.1')).toBe(true);
    expect(ask('/metrics', '10.0.0.5')).toBe(false);
    expect(
      checkAdminAccess({
        path: '/queues',
        remoteAddress: '10.0.0.5',
        authorization: undefined,
        token: undefined,
      }),
    ).toMatchObject({ status: 403 });
  });

  it('with a token asks everyone for it, as Bearer or as the Basic password', () => {
    const token = 'admin-token-0123456789';
    expect(ask('/metrics', '10.0.0.5', `Bearer ${token}`, token)).toBe(true);
    expect(ask('/queues', '10.0.0.5', basic(token), token)).toBe(true);
    expect(ask('/metrics', '127.0.0.1', undefined, token)).toBe(false);
    expect(ask('/metrics', '10.0.0.5', 'Bearer wrong', token)).toBe(false);
    expect(ask('/metrics', '10.0.0.5', basic('wrong'), token)).toBe(false);
    expect(
      checkAdminAccess({ path: '/metrics', remoteAddress: '1.2.3.4', authorization: undefined, token }),
    ).toMatchObject({ status: 401 });
  });

  it('always answers /healthz (probes carry no credentials)', () => {
    expect(ask('/healthz', '10.0.0.5', undefined, 'tok-123456')).toBe(true);
    expect(ask('/healthz', '10.0.0.5')).toBe(true);
  });

  it('reads Bearer and Basic credentials, nothing else', () => {
    expect(credentialOf('Bearer abc')).toBe('abc');
    expect(credentialOf('bearer abc')).toBe('abc');
    expect(credentialOf(basic('p:w'))).toBe('p:w');
    expect(credentialOf('Digest x')).toBeUndefined();
    expect(credentialOf(undefined)).toBeUndefined();
  });
});
