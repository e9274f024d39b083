/**
 * bull-board on a running `validic-sync worker`: its page and API answer on the admin listener (without a
 * token to loopback clients, with one only to requests that carry it), and never on the push listener.
 */
import { describe, expect, it } from 'vitest';
import { QUEUE_NAME } from '../../src/queue/job-queue.ts';
import { useSandbox, useTestRedis } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { startWorkerChild, workerChildEnv } from '../helpers/worker-fleet.ts';

const TOKEN = 'dashboard-admin-token-0123456789';

describe('the queue dashboard of a running worker', () => {
  const sandbox = useSandbox({ seed: 31, users: 2, days: 3 });
  const db = useTestDatabase();
  const testRedis = useTestRedis('dashboard');

  const run = async (
    extra: Record<string, string>,
    check: (admin: string, push: string) => Promise<void>,
  ) => {
    const worker = await startWorkerChild(
      workerChildEnv(sandbox, db.url, testRedis, {
        PUSH_SECRET: 'dashboard-push-secret-0123456789',
        ...extra,
      }),
    );
    try {
      await check(worker.url, new URL(worker.pushUrl!).origin);
    } finally {
      await worker.stop();
    }
  };

  it('answers loopback clients without a token, and only on the admin listener', {
    timeout: 90_000,
  }, async () => {
    await run({}, async (admin, push) => {
      const page = await fetch(`${admin}/queues`);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<html/i);
      const api = (await (await fetch(`${admin}/queues/api/queues`)).json()) as {
        queues: { name: string; readOnlyMode: boolean }[];
      };
      expect(api.queues.map((q) => [q.name, q.readOnlyMode])).toEqual([[QUEUE_NAME, true]]);
      for (const path of ['/queues', '/queues/api/queues']) {
        expect((await fetch(`${push}${path}`)).status, path).toBe(404);
      }
    });
  });

  it('asks every client for the admin token once one is set', { timeout: 90_000 }, async () => {
    await run({ VALIDIC_ADMIN_TOKEN: TOKEN }, async (admin, push) => {
      expect((await fetch(`${admin}/queues`)).status).toBe(401);
      expect((await fetch(`${admin}/queues/api/queues`)).status).toBe(401);
      const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
      expect((await fetch(`${admin}/queues`, auth)).status).toBe(200);
      expect((await fetch(`${admin}/queues/api/queues`, auth)).status).toBe(200);
      expect((await fetch(`${push}/queues`, auth)).status).toBe(404);
      expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    });
  });
});
