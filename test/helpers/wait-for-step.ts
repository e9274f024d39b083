/**
 * `vi.waitFor` with a named step: when a wait times out, the error says which step hung (and after how
 * long), not just the last failed assertion, so a timed-out e2e or fault test points at its own step.
 */
import { vi } from 'vitest';

export async function waitForStep<T>(
  step: string,
  check: () => T | Promise<T>,
  options: { timeout: number; interval?: number },
): Promise<T> {
  try {
    return await vi.waitFor(check, { timeout: options.timeout, interval: options.interval ?? 50 });
  } catch (error) {
    const seconds = options.timeout / 1000;
    const last = error instanceof Error ? error.message : String(error);
    throw new Error(`timed out after ${seconds} s waiting for ${step}: ${last}`, { cause: error });
  }
}
