import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { ConfigError } from '../../src/errors/index.ts';
import { REDACTED, redactKnownSecrets, redactValue } from '../../src/redact/redact-secrets.ts';

const emptyDir = mkdtempSync(join(tmpdir(), 'vs-config-'));

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.key}: ${p.message} | ${p.fix}`);
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('builds an organization from the environment, with legacy credentials defaulting to v2 ones', () => {
    const config = loadConfig({ VALIDIC_ORG_ID: 'org-1', VALIDIC_TOKEN: 'tok-123456' }, { cwd: emptyDir });
    expect(config.organizations).toHaveLength(1);
    const org = config.organizations[0]!;
    expect(org).toMatchObject({
      orgId: 'org-1',
      legacyOrgId: 'org-1',
      legacyToken: 'tok-123456',
      requestsPerHour: 2000,
    });
    expect(org.apiUrl).toBe('https://api.v2.validic.com');
    expect(config.http.port).toBe(3000);
  });

  it('reads the two listeners from HTTP_HOST/HTTP_PORT and PUSH_HOST/PUSH_PORT, both loopback by default', () => {
    const defaults = loadConfig({}, { cwd: emptyDir }).http;
    expect(defaults).toMatchObject({ host: '127.0.0.1', port: 3000, pushHost: '127.0.0.1', pushPort: 3001 });
    const set = loadConfig(
      { HTTP_HOST: '10.0.0.5', HTTP_PORT: '9100', PUSH_HOST: '0.0.0.0', PUSH_PORT: '8443' },
      { cwd: emptyDir },
    ).http;
    expect(set).toMatchObject({ host: '10.0.0.5', port: 9100, pushHost: '0.0.0.0', pushPort: 8443 });
    expect(problemsOf(() => loadConfig({ PUSH_PORT: '70000' }, { cwd: emptyDir }))[0]).toMatch(
      /^PUSH_PORT \(http\.pushPort\): Too big/,
    );
  });

  it('reads the push settings (application secret, limits) and redacts the application secret', () => {
    const config = loadConfig(
      {
        VALIDIC_ORG_ID: 'org-1',
        VALIDIC_TOKEN: 'tok-123456',
        VALIDIC_APPLICATION_SECRET: 'app-secret-7731',
        PUSH_MAX_ITEMS: '50',
        PUSH_RATE_PER_MINUTE: '30',
      },
      { cwd: emptyDir },
    );
    expect(config.organizations[0]!.applicationSecret).toBe('app-secret-7731');
    expect(config.push).toEqual({
      signatureMaxAgeSeconds: 300,
      maxItems: 50,
      ratePerMinute: 30,
      coalesceSeconds: 10,
      retentionDays: 30,
      pruneMinutes: 1440,
    });
    expect(JSON.stringify(redactValue(config))).not.toContain('app-secret-7731');
    expect(redactValue(config).organizations[0]!.applicationSecret).toBe(REDACTED);
    expect(redactKnownSecrets('signed with app-secret-7731')).toBe(`signed with ${REDACTED}`);
  });

  it('lets the environment win over the file, and keeps several organizations from the file', () => {
    const file = join(emptyDir, 'several.json');
    writeFileSync(
      file,
      JSON.stringify({
        logLevel: 'warn',
        organizations: [
          { orgId: 'a', token: 'token-a-1234' },
          { orgId: 'b', token: 'token-b-1234', requestsPerHour: 500 },
        ],
      }),
    );
    const config = loadConfig(
      { LOG_LEVEL: 'debug', VALIDIC_REQUESTS_PER_HOUR: '1000' },
      { file, cwd: emptyDir },
    );
    expect(config.logLevel).toBe('debug');
    expect(config.organizations.map((o) => [o.orgId, o.requestsPerHour])).toEqual([
      ['a', 1000],
      ['b', 500],
    ]);
  });

  it('reads the warehouse upkeep settings: raw retention off and two months ahead by default', () => {
    expect(loadConfig({}, { cwd: emptyDir }).warehouse).toEqual({
      rawRetentionMonths: 0,
      partitionMonthsAhead: 2,
      maintainMinutes: 1440,
    });
    const set = loadConfig({ RAW_RETENTION_MONTHS: '13', PARTITION_MONTHS_AHEAD: '3' }, { cwd: emptyDir });
    expect(set.warehouse).toMatchObject({ rawRetentionMonths: 13, partitionMonthsAhead: 3 });
    const problems = problemsOf(() => loadConfig({ RAW_RETENTION_MONTHS: '-1' }, { cwd: emptyDir }));
    expect(problems.join('\n')).toMatch(/RAW_RETENTION_MONTHS/);
  });

  it('lists every problem at once, each naming the env variable and the fix', () => {
    const problems = problemsOf(() =>
      loadConfig(
        {
          VALIDIC_ORG_ID: 'o',
          HTTP_PORT: 'abc',
          LOG_LEVEL: 'loud',
          VALIDIC_API_URL: 'http://api.example.com',
        },
        { cwd: emptyDir },
      ),
    );
    expect(problems.join('\n')).toMatch(/VALIDIC_TOKEN.*is missing \| set VALIDIC_TOKEN/);
    expect(problems.join('\n')).toMatch(/HTTP_PORT/);
    expect(problems.join('\n')).toMatch(/LOG_LEVEL/);
    expect(problems.join('\n')).toMatch(/VALIDIC_API_URL.*not https/);
    expect(problems).toHaveLength(4);
  });

  it('allows plain http only on loopback and only when asked', () => {
    const env = {
      VALIDIC_ORG_ID: 'o',
      VALIDIC_TOKEN: 'tok-123456',
      VALIDIC_API_URL: 'http://127.0.0.1:9/api',
    };
    expect(problemsOf(() => loadConfig(env, { cwd: emptyDir })).join()).toMatch(
      /VALIDIC_ALLOW_INSECURE_LOOPBACK/,
    );
    expect(
      loadConfig({ ...env, VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true' }, { cwd: emptyDir }).organizations[0]!
        .apiUrl,
    ).toBe('http://127.0.0.1:9/api');
    const remote = {
      ...env,
      VALIDIC_API_URL: 'http://10.1.2.3/api',
      VALIDIC_ALLOW_INSECURE_LOOPBACK: 'true',
    };
    expect(problemsOf(() => loadConfig(remote, { cwd: emptyDir })).join()).toMatch(/use an https:\/\/ URL/);
  });

  it('reports a broken or missing config file', () => {
    const bad = join(emptyDir, 'bad.json');
    writeFileSync(bad, '{ not json');
    expect(problemsOf(() => loadConfig({}, { file: bad, cwd: emptyDir })).join()).toMatch(/not valid JSON/);
    expect(
      problemsOf(() => loadConfig({ VALIDIC_SYNC_CONFIG: 'nope.json' }, { cwd: emptyDir })).join(),
    ).toMatch(/does not exist/);
  });
});

describe('stream.resources', () => {
  const withFilter = (resources: unknown) => {
    const file = join(emptyDir, 'stream-filter.json');
    writeFileSync(
      file,
      JSON.stringify({ organizations: [{ orgId: 'o', token: 'tok-123456', stream: { resources } }] }),
    );
    return () => loadConfig({}, { file, cwd: emptyDir });
  };

  it('maps REST path names to the record types the stream filter takes', () => {
    const config = withFilter([
      'measurements',
      'Summaries',
      'workouts',
      'sleep',
      'cgm',
      'connections',
      'measurement',
    ])();
    expect(config.organizations[0]!.stream.resources).toEqual([
      'measurement',
      'summary',
      'workout',
      'sleep',
      'cgm',
      'connection',
    ]);
  });

  it('refuses a type the platform does not stream, naming the key and the allowed values', () => {
    const problems = problemsOf(withFilter(['measurement', 'steps', 'weight']));
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /^organizations\.0\.stream\.resources\.1: "steps" is not a type the platform streams; use one or more of: measurement, nutrition, intraday, summary, workout, sleep, cgm, connection .*\| correct organizations\.0\.stream\.resources\.1 in the config file$/,
    );
    expect(problems[1]).toMatch(/resources\.2: "weight" is not a type/);
  });
});

describe('insecure hosts', () => {
  it('accepts plain http for hosts listed in VALIDIC_ALLOW_INSECURE_HOSTS only', () => {
    const env = {
      VALIDIC_ORG_ID: 'o',
      VALIDIC_TOKEN: 'tok-123456',
      VALIDIC_API_URL: 'http://sandbox:8080/api',
      VALIDIC_ALLOW_INSECURE_HOSTS: 'sandbox, other',
    };
    expect(loadConfig(env, { cwd: emptyDir }).allowInsecureHosts).toEqual(['sandbox', 'other']);
    expect(() => loadConfig({ ...env, VALIDIC_ALLOW_INSECURE_HOSTS: 'other' }, { cwd: emptyDir })).toThrow(
      ConfigError,
    );
  });
});
