/**
 * Who may use the admin listener: a Host header naming it (loopback names, the bound address, the
 * configured names; anything else is DNS rebinding or a mistake: 421), then the token when one is set,
 * loopback clients without a proxy header otherwise.
 */
import { describe, expect, it } from 'vitest';
import { adminHostNames, checkAdminAccess, credentialOf, hostNameOf } from '../../src/server/admin-access.ts';

const LOOPBACK_HOSTS = adminHostNames({ bindHost: '127.0.0.1', allowedHosts: [] });
const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
const check = (
  path: string,
  remoteAddress: string,
  options: { authorization?: string; token?: string; host?: string; headers?: Record<string, string> } = {},
) =>
  checkAdminAccess({
    path,
    remoteAddress,
    headers: {
      host: options.host ?? '127.0.0.1:3000',
      ...(options.authorization ? { authorization: options.authorization } : {}),
      ...options.headers,
    },
    token: options.token,
    hostNames: LOOPBACK_HOSTS,
  });
const ask = (path: string, remoteAddress: string, authorization?: string, token?: string) =>
  check(path, remoteAddress, {
    ...(authorization ? { authorization } : {}),
    ...(token ? { token } : {}),
  }).allowed;

describe('admin access', () => {
  it('without a token serves loopback clients only (IPv4, IPv6, mapped)', () => {
    expect(ask('/metrics', '127.0.0.1')).toBe(true);
    expect(ask('/queues', '::1')).toBe(true);
    expect(ask('/metrics', '::ffff:127.0.0.1')).toBe(true);
    expect(ask('/metrics', '10.0.0.5')).toBe(false);
    expect(check('/queues', '10.0.0.5')).toMatchObject({ status: 403 });
  });

  it('with a token asks everyone for it, as Bearer or as the Basic password', () => {
    const token = 'admin-token-0123456789';
    expect(ask('/metrics', '10.0.0.5', `Bearer ${token}`, token)).toBe(true);
    expect(ask('/queues', '10.0.0.5', basic(token), token)).toBe(true);
    expect(ask('/metrics', '127.0.0.1', undefined, token)).toBe(false);
    expect(ask('/metrics', '10.0.0.5', 'Bearer wrong', token)).toBe(false);
    expect(ask('/metrics', '10.0.0.5', basic('wrong'), token)).toBe(false);
    expect(check('/metrics', '1.2.3.4', { token })).toMatchObject({ status: 401 });
  });

  it('always answers /healthz (probes carry no credentials and name no host of ours)', () => {
    expect(ask('/healthz', '10.0.0.5', undefined, 'tok-123456')).toBe(true);
    expect(ask('/healthz', '10.0.0.5')).toBe(true);
    expect(check('/healthz', '127.0.0.1', { host: 'evil.example' }).allowed).toBe(true);
  });

  it('refuses a Host that is not one of its names, even from loopback and with the token (DNS rebinding)', () => {
    const token = 'admin-token-0123456789';
    for (const host of ['evil.example', 'evil.example:3000', '127.0.0.1.evil.example', '', '[::2]:3000']) {
      const refused = check('/metrics', '127.0.0.1', { host });
      expect(refused, host).toMatchObject({ allowed: false, status: 421 });
      expect(
        check('/queues', '10.0.0.5', { host, authorization: `Bearer ${token}`, token }),
        host,
      ).toMatchObject({ allowed: false, status: 421 });
    }
    expect(
      (check('/metrics', '127.0.0.1', { host: 'evil.example' }) as { message: string }).message,
    ).toContain('HTTP_ALLOWED_HOSTS');
    for (const host of [
      'localhost',
      'LOCALHOST:3000',
      '127.0.0.1',
      '127.0.0.1:3000',
      '[::1]:3000',
      'localhost.',
    ])
      expect(check('/metrics', '127.0.0.1', { host }).allowed, host).toBe(true);
  });

  it('answers to the bound address and the configured names', () => {
    const names = adminHostNames({
      bindHost: '10.0.0.7',
      allowedHosts: ['metrics.internal', 'Worker-1:3000'],
    });
    expect([...names].sort()).toEqual(
      ['10.0.0.7', '127.0.0.1', '::1', 'localhost', 'metrics.internal', 'worker-1'].sort(),
    );
    // A wildcard bind is no name.
    expect(adminHostNames({ bindHost: '0.0.0.0', allowedHosts: [] }).has('0.0.0.0')).toBe(false);
    expect(adminHostNames({ bindHost: '::', allowedHosts: [] }).has('::')).toBe(false);
  });

  it('does not trust a loopback client that a proxy forwarded', () => {
    for (const header of ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via', 'x-forwarded-host']) {
      const refused = check('/metrics', '127.0.0.1', { headers: { [header]: '203.0.113.9' } });
      expect(refused, header).toMatchObject({ allowed: false, status: 403 });
    }
    // With the token, a proxied request is served like any other.
    const token = 'admin-token-0123456789';
    expect(
      check('/metrics', '127.0.0.1', {
        token,
        authorization: `Bearer ${token}`,
        headers: { 'x-forwarded-for': '203.0.113.9' },
      }).allowed,
    ).toBe(true);
  });

  it('reads host names out of Host headers', () => {
    expect(hostNameOf('Example.COM:8080')).toBe('example.com');
    expect(hostNameOf('[::1]:3000')).toBe('::1');
    expect(hostNameOf('::1')).toBe('::1');
    expect(hostNameOf('')).toBeUndefined();
    expect(hostNameOf(undefined)).toBeUndefined();
  });

  it('reads Bearer and Basic credentials, nothing else', () => {
    expect(credentialOf('Bearer abc')).toBe('abc');
    expect(credentialOf('bearer abc')).toBe('abc');
    expect(credentialOf(basic('p:w'))).toBe('p:w');
    expect(credentialOf('Digest x')).toBeUndefined();
    expect(credentialOf(undefined)).toBeUndefined();
  });
});
