/**
 * docker-compose.yml as compose itself reads it (`docker-compose config`, no engine needed): what is
 * published, who logs in to PostgreSQL and Redis, and that the passwords are required.
 *
 * Needs Debian's `docker-compose` (v1; `apt-get install docker-compose`, which brings python3-yaml, used
 * here to turn its YAML into JSON). Skipped where it is not installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const hasCompose = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;

const PASSWORDS = {
  POSTGRES_PASSWORD: 'pgsuper1',
  VALIDIC_OWNER_PASSWORD: 'owner1',
  VALIDIC_LOADER_PASSWORD: 'loader1',
  REDIS_PASSWORD: 'redis1',
};

interface Service {
  ports?: (string | { published: number | string; target: number; host_ip?: string })[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
}

function composeConfig(env: Record<string, string>) {
  return spawnSync('docker-compose', ['config'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
  });
}

function services(): Record<string, Service> {
  const result = composeConfig(PASSWORDS);
  expect(result.status, result.stderr).toBe(0);
  const json = execFileSync(
    'python3',
    ['-c', 'import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))'],
    { input: result.stdout, encoding: 'utf8' },
  );
  return JSON.parse(json).services;
}

/** `host:published->target`, whichever of compose's two port forms it printed. */
function published(service: Service): string[] {
  return (service.ports ?? []).map((p) => {
    if (typeof p !== 'string') return `${p.host_ip ?? '0.0.0.0'}:${p.published}->${p.target}`;
    const [spec] = p.split('/');
    const parts = spec!.split(':');
    const [host, pub, target] = parts.length === 3 ? parts : ['0.0.0.0', ...parts];
    return `${host}:${pub}->${target}`;
  });
}

// CI installs docker-compose (.ci/run); a developer machine without it skips this file.
describe.skipIf(!hasCompose && process.env.CI !== 'true')(
  'docker-compose.yml (docker-compose config)',
  () => {
    it('refuses to start without each password, naming it', () => {
      for (const missing of Object.keys(PASSWORDS)) {
        const env = Object.fromEntries(Object.entries(PASSWORDS).filter(([k]) => k !== missing));
        const result = composeConfig(env);
        expect(result.status, missing).not.toBe(0);
        expect(result.stderr).toContain(`set ${missing}`);
      }
    });

    it('publishes only the push port, and the sandbox on loopback', () => {
      const all = services();
      const ports = Object.fromEntries(Object.entries(all).map(([name, s]) => [name, published(s)]));
      expect(ports).toEqual({
        postgres: [],
        redis: [],
        sandbox: ['127.0.0.1:8080->8080'],
        migrate: [],
        worker: ['0.0.0.0:3001->3001'],
      });
      const env = Object.fromEntries(
        Object.entries(all.worker!.environment!).map(([k, v]) => [k, String(v)]),
      );
      expect(env).toMatchObject({
        PUSH_HOST: '0.0.0.0',
        PUSH_PORT: '3001',
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: '3000',
      });
    });

    it('logs migrate and the worker in as the owner and loader logins, never the superuser', () => {
      const all = services();
      const login = (name: string) => new URL(all[name]!.environment!.DATABASE_URL!);
      expect([login('migrate').username, login('migrate').password]).toEqual(['validic_migrator', 'owner1']);
      expect([login('worker').username, login('worker').password]).toEqual(['validic_app', 'loader1']);
      expect(all.postgres!.environment).toMatchObject({
        POSTGRES_USER: 'postgres',
        POSTGRES_PASSWORD: 'pgsuper1',
      });
      expect(all.postgres!.volumes).toContainEqual(
        expect.stringMatching(/deploy\/postgres\/init:\/docker-entrypoint-initdb\.d:ro$/),
      );
    });

    it('requires the Redis password, which REDIS_URL and the healthcheck carry', () => {
      const all = services();
      const command = all.redis!.command!;
      expect(command[command.indexOf('--requirepass') + 1]).toBe('redis1');
      expect(all.redis!.environment).toMatchObject({ REDISCLI_AUTH: 'redis1' });
      for (const name of ['migrate', 'worker'])
        expect(new URL(all[name]!.environment!.REDIS_URL!).password).toBe('redis1');
    });
  },
);
