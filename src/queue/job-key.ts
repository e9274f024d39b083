/**
 * The deterministic id of a unit of work: the job name and the payload fields that identify it, each
 * URI-encoded and joined with '|' (an absent field is ''), so no field can run into the next. The same
 * key is never queued twice while it waits or runs (job-queue.ts, inline-runner.ts); job-options.ts
 * escapes the ':' BullMQ reserves.
 */
export function jobKey(name: string, ...parts: (string | undefined)[]): string {
  return [name, ...parts].map((part) => encodeURIComponent(part ?? '')).join('|');
}
