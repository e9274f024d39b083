/**
 * `defineJob` and `JobContext` of this catalog: a job's `ctx.enqueue(name, payload)` takes the payload
 * type of the job it names. The payload schemas are in payloads.ts, which imports no job module, so the
 * job modules, this file and payloads.ts form no cycle; jobs/index.ts checks the catalog against them.
 */
import type { JobContext as QueueJobContext } from '../src/queue/job-context.ts';
import { defineJobFor } from '../src/queue/job-definition.ts';
import type { JobPayloads } from './payloads.ts';

export type JobContext = QueueJobContext<JobPayloads>;

export const defineJob = defineJobFor<JobPayloads>();
