/**
 * The provider's push signature: Base64(HMAC-SHA1(application secret, access token + service name +
 * X-Validic-Timestamp)). Checked against the provider's own published example, against a vector computed
 * here from the formula (not with the code under test), under both service names, with both timestamp
 * forms (the provider's example form and ISO-8601, plus epoch seconds), stale timestamps, the
 * constant-time comparison, and strict base64 (one spelling per byte string).
 */
import * as crypto from 'node:crypto';
import fc from 'fast-check';
import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('node:crypto', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:crypto')>();
  return { ...original, timingSafeEqual: vi.fn(original.timingSafeEqual) };
});

const { checkSignedPush, decodeStrictBase64, parsePushTimestamp, pushSignature, pushSignatureMatches } =
  await import('../../src/push/push-admission.ts');

const formula = (secret: string, token: string, service: string, timestamp: string) =>
  crypto.createHmac('sha1', secret).update(`${token}${service}${timestamp}`).digest('base64');

// From the provider's help page "Validating the Signature".
const EXAMPLE = {
  accessToken: 'e61467e3845e8a66f7453dc55ea3fc445d1b879a6f96ebe7b243badbeae04f63',
  applicationSecret: '123ABC',
  timestamp: '2015-12-08T16:04:18029095657000',
  signature: 'iYg596AeXNSgUqEPJHu6LKIVUGU=',
};

beforeEach(() => {
  vi.mocked(crypto.timingSafeEqual).mockClear();
});

describe('pushSignature / pushSignatureMatches', () => {
  it("reproduces the provider's published example", () => {
    expect(pushSignature({ ...EXAMPLE, serviceName: 'notification' })).toBe(EXAMPLE.signature);
    expect(pushSignatureMatches({ ...EXAMPLE, given: EXAMPLE.signature })).toBe(true);
  });

  it('accepts a vector computed from the formula under either service name, and nothing else', () => {
    const input = {
      applicationSecret: 'app-secret-1',
      accessToken: 'tok-1',
      timestamp: '2026-03-15T12:00:00Z',
    };
    for (const service of ['notification', 'notifications']) {
      const given = formula(input.applicationSecret, input.accessToken, service, input.timestamp);
      expect(pushSignatureMatches({ ...input, given })).toBe(true);
    }
    const wrong = [
      formula('other-secret', input.accessToken, 'notification', input.timestamp),
      formula(input.applicationSecret, 'other-token', 'notification', input.timestamp),
      formula(input.applicationSecret, input.accessToken, 'notification', '2026-03-15T12:00:01Z'),
      formula(input.applicationSecret, input.accessToken, 'push', input.timestamp),
      '',
      'not base64 at all',
      formula(input.applicationSecret, input.accessToken, 'notification', input.timestamp).slice(0, 20),
    ];
    for (const given of wrong) expect(pushSignatureMatches({ ...input, given })).toBe(false);
  });

  it('compares with crypto.timingSafeEqual, for both service names', () => {
    const compare = vi.mocked(crypto.timingSafeEqual);
    expect(pushSignatureMatches({ ...EXAMPLE, given: EXAMPLE.signature })).toBe(true);
    expect(compare).toHaveBeenCalledTimes(2);
  });
});

describe('parsePushTimestamp', () => {
  it("reads the provider example's form (UTC seconds + a dot-less fraction)", () => {
    expect(parsePushTimestamp(EXAMPLE.timestamp)).toBe(Date.parse('2015-12-08T16:04:18.029Z'));
    expect(parsePushTimestamp('2015-12-08T16:04:18')).toBe(Date.parse('2015-12-08T16:04:18Z'));
  });

  it('reads ISO-8601 with Z, an offset, a fraction or no zone (UTC), and epoch seconds or ms', () => {
    const at = Date.parse('2026-03-15T12:00:00Z');
    expect(parsePushTimestamp('2026-03-15T12:00:00Z')).toBe(at);
    expect(parsePushTimestamp('2026-03-15T12:00:00.000Z')).toBe(at);
    expect(parsePushTimestamp('2026-03-15T14:00:00+02:00')).toBe(at);
    expect(parsePushTimestamp('2026-03-15T07:00:00-0500')).toBe(at);
    expect(parsePushTimestamp(String(at / 1000))).toBe(at);
    expect(parsePushTimestamp(String(at))).toBe(at);
  });

  it('refuses what is none of them', () => {
    for (const value of [undefined, '', 'yesterday', '2026-13-45T99:00:00Z', '12', 'Tue, 15 Mar 2026']) {
      expect(parsePushTimestamp(value)).toBeUndefined();
    }
  });
});

describe('decodeStrictBase64', () => {
  it('reads the canonical padded form of any bytes, and nothing else that node would decode to them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 40 }), (bytes) => {
        const text = Buffer.from(bytes).toString('base64');
        expect(decodeStrictBase64(text)).toEqual(Buffer.from(bytes));
        const urlSafe = text.replaceAll('+', '-').replaceAll('/', '_');
        const others = [
          text.replace(/=+$/, ''),
          `${text}=`,
          `${text}x`,
          ` ${text}`,
          `${text}\n`,
          ...(urlSafe !== text ? [urlSafe] : []),
        ].filter((other) => other !== text);
        for (const other of others) expect(decodeStrictBase64(other), other).toBeUndefined();
      }),
    );
  });

  it('refuses a non-canonical last character (unused bits set)', () => {
    expect(decodeStrictBase64('iYg596AeXNSgUqEPJHu6LKIVUGU=')).toHaveLength(20);
    expect(Buffer.from('iYg596AeXNSgUqEPJHu6LKIVUGV=', 'base64')).toEqual(
      Buffer.from('iYg596AeXNSgUqEPJHu6LKIVUGU=', 'base64'),
    );
    expect(decodeStrictBase64('iYg596AeXNSgUqEPJHu6LKIVUGV=')).toBeUndefined();
  });
});

describe('checkSignedPush', () => {
  const now = Date.parse('2026-03-15T12:00:00Z');
  const orgs = [
    { orgId: 'org-a', applicationSecret: 'secret-a', accessToken: 'token-a' },
    { orgId: 'org-b', applicationSecret: 'secret-b', accessToken: 'token-b' },
  ];
  const signed = (org: (typeof orgs)[number], timestamp: string, service = 'notification') => ({
    signature: formula(org.applicationSecret, org.accessToken, service, timestamp),
    timestamp,
    orgs,
    now,
    maxAgeMs: 300_000,
  });

  it('tells which org signed, in either timestamp form, with the signature bytes and the timestamp', () => {
    const b = signed(orgs[1]!, '2026-03-15T11:58:00000000000000');
    expect(checkSignedPush(b)).toEqual({
      ok: true,
      orgId: 'org-b',
      signature: Buffer.from(b.signature, 'base64'),
      at: Date.parse('2026-03-15T11:58:00Z'),
    });
    expect(checkSignedPush(signed(orgs[0]!, '2026-03-15T11:58:00Z', 'notifications'))).toMatchObject({
      ok: true,
      orgId: 'org-a',
    });
    expect(checkSignedPush(signed(orgs[0]!, String(now / 1000 - 60)))).toMatchObject({
      ok: true,
      orgId: 'org-a',
    });
  });

  it('refuses a stale or far-future timestamp, a missing or unreadable one, and a bad signature', () => {
    // The signature verified first: a refusal for the timestamp names the org that signed.
    expect(checkSignedPush(signed(orgs[0]!, '2026-03-15T11:54:59Z'))).toEqual({
      ok: false,
      reason: 'stale timestamp',
      orgId: 'org-a',
    });
    expect(checkSignedPush(signed(orgs[0]!, '2026-03-15T11:54:59000000000000'))).toMatchObject({
      reason: 'stale timestamp',
    });
    expect(checkSignedPush(signed(orgs[0]!, '2026-03-15T12:05:01Z'))).toMatchObject({
      reason: 'stale timestamp',
    });
    expect(checkSignedPush({ ...signed(orgs[0]!, 'x'), timestamp: undefined })).toMatchObject({
      reason: 'missing timestamp',
    });
    expect(checkSignedPush(signed(orgs[0]!, 'soon'))).toMatchObject({ reason: 'unreadable timestamp' });
    const forged = {
      ...signed(orgs[0]!, '2026-03-15T11:59:00Z'),
      signature: formula('guess', 'token-a', 'notification', '2026-03-15T11:59:00Z'),
    };
    expect(checkSignedPush(forged)).toEqual({ ok: false, reason: 'bad signature' });
  });
});
