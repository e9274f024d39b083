/**
 * What the HTTP client tells its budget and the platform clock: a request answered 429 spends one
 * token however many 429s it meets, the 429 goes back to the budget with its ticket (and Retry-After),
 * successes are counted, and every answer's `Date` header reaches the platform clock.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { BudgetTicket, RequestBudget } from '../../src/http/http-client-types.ts';
import { createManualClock, type ManualClock } from '../../src/time/manual-clock.ts';
import { createPlatformClock } from '../../src/time/platform-clock.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const URL_ = `${ORIGIN}/organizations/o1/users?token=secret-token-123&limit=2&offset=0`;
const isUsers = (path: string) => path.startsWith('/organizations/o1/users');

const mock = useMockAgent(ORIGIN);
let clock: ManualClock;

beforeEach(() => {
  clock = createManualClock();
});

function countingBudget() {
  const calls = { takes: 0, ready: 0, succeeded: 0, rateLimited: [] as [BudgetTicket, number | undefined][] };
  let epoch = 0;
  const budget: RequestBudget = {
    key: 'k',
    async take() {
      calls.takes++;
      return { epoch };
    },
    async ready() {
      calls.ready++;
    },
    async rateLimited(ticket, retryAfterMs) {
      calls.rateLimited.push([ticket, retryAfterMs]);
      epoch++;
    },
    succeeded() {
      calls.succeeded++;
    },
    async remaining() {
      return 0;
    },
    async grantedPerHour() {
      return 0;
    },
  };
  return { budget, calls };
}

describe('the HTTP client and its budget', () => {
  it('spends one token on a request answered 429 three times, and tells the budget each 429', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: isUsers, method: 'GET' }).reply(429, '', { headers: { 'retry-after': '2' } });
    pool.intercept({ path: isUsers, method: 'GET' }).reply(429, '');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(429, '');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [] });
    const { budget, calls } = countingBudget();
    await mock.http({ clock, budget, backoff: { random: () => 0 } }).getJson(URL_);
    expect(calls.takes).toBe(1);
    expect(calls.ready).toBe(3);
    // Every 429 carries the ticket of the token the request was sent on, and its Retry-After.
    expect(calls.rateLimited).toEqual([
      [{ epoch: 0 }, 2000],
      [{ epoch: 0 }, undefined],
      [{ epoch: 0 }, undefined],
    ]);
    expect(calls.succeeded).toBe(1);
  });

  it('takes a new token after a 5xx (the platform served it) and counts a 404 as an answer, not a refusal', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: isUsers, method: 'GET' }).reply(503, '');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [] });
    const { budget, calls } = countingBudget();
    await mock.http({ clock, budget, backoff: { random: () => 0 } }).getJson(URL_);
    expect(calls.takes).toBe(2);
    expect(calls.rateLimited).toEqual([]);
  });

  it('tells the platform clock the Date of every answer, 429s included', async () => {
    const platformAt = clock.now() - 20 * 60_000;
    const date = new Date(platformAt).toUTCString();
    const pool = mock.agent.get(ORIGIN);
    pool
      .intercept({ path: isUsers, method: 'GET' })
      .reply(429, '', { headers: { date, 'retry-after': '1' } });
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [] }, { headers: { date } });
    const platformClock = createPlatformClock(() => clock.now());
    await mock.http({ clock, platformClock }).getJson(URL_);
    const { offsetMs, uncertaintyMs } = platformClock.reading();
    expect(Math.abs(offsetMs - -20 * 60_000)).toBeLessThanOrEqual(uncertaintyMs + 1000);
    expect(platformClock.earliestNow()).toBeLessThanOrEqual(platformAt + 1000 + 1000);
  });
});
