/**
 * A fresh undici MockAgent per test (no network), the requests it saw, and an HTTP client on it:
 * the set-up every client test shares. `useMockAgent(origin)` registers the beforeEach/afterEach hooks.
 */
import { MockAgent } from 'undici';
import { afterEach, beforeEach } from 'vitest';
import { createHttpClient } from '../../src/http/http-client.ts';
import type { HttpClientOptions } from '../../src/http/http-client-types.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';

export interface SeenRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  /** The parsed JSON body, if any. */
  body: unknown;
}

export interface Answer {
  status?: number;
  /** A string is sent as is; anything else as JSON. */
  body: unknown;
}

export function useMockAgent(origin: string) {
  let agent: MockAgent;
  let seen: SeenRequest[] = [];
  const start = () => {
    agent = new MockAgent();
    agent.disableNetConnect();
    seen = [];
  };
  beforeEach(start);
  afterEach(async () => {
    await agent.close();
  });
  return {
    get agent() {
      return agent;
    },
    /** Every request answered by `serve`, in order. */
    get requests() {
      return seen;
    },
    /** The URLs of `requests`. */
    get requested() {
      return seen.map((r) => r.url);
    },
    /**
     * An HTTP client on the agent, with a manual clock (retries do not wait) unless `options` names
     * another; `options` (maxBodyBytes, backoff, budgets, ...) go to the client as they are.
     */
    http: (options: Omit<HttpClientOptions, 'dispatcher'> = {}) =>
      createHttpClient({ dispatcher: agent, clock: createManualClock(), ...options }),
    /** Answers every request of `method` whose path passes `path`, recording it. */
    serve(
      answer: (req: SeenRequest) => Answer,
      {
        method = 'GET',
        path = (_: string): boolean => true,
      }: { method?: string; path?: (p: string) => boolean } = {},
    ) {
      agent
        .get(origin)
        .intercept({ path, method })
        .reply((req) => {
          const body = typeof req.body === 'string' && req.body !== '' ? JSON.parse(req.body) : undefined;
          const request = {
            method,
            url: new URL(req.path, origin),
            headers: { ...(req.headers as Record<string, string>) },
            body,
          };
          seen.push(request);
          const { status = 200, body: out } = answer(request);
          return { statusCode: status, data: typeof out === 'string' ? out : JSON.stringify(out) };
        })
        .persist();
    },
    /** Closes the agent and starts a fresh one with no intercepts and no recorded requests. */
    async reset() {
      await agent.close();
      start();
    },
  };
}
