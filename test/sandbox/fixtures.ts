/** Shared test setup: a sandbox with a fixed clock anchor so generated data is the same every run. */
import { fetch, type RequestInit } from 'undici';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';

export const ANCHOR = new Date('2026-03-15T12:00:00Z');

export function startTestSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  return startSandbox({ seed: 42, users: 6, days: 30, now: ANCHOR, pokeIntervalMs: 100, ...options });
}

export async function getJson(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; body: any; text: string; headers: { get(name: string): string | null } }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, body, text, headers: res.headers };
}

export function sendJson(url: string, method: string, body: unknown, headers: Record<string, string> = {}) {
  return getJson(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}
