/**
 * The first start leaves nobody behind at 1,000 users, under both readings of where a new stream begins
 * (test/helpers/first-start-scenario.ts says what is run and checked). Two resources, and a sandbox that
 * makes only those, so a sweep of the population is 2,000 requests rather than 7,000: at the default
 * 2,000 requests an hour the first sync takes about 1.2 simulated hours (36 s at ×120).
 */
import { describeFirstStart } from '../helpers/first-start-scenario.ts';

const mix = { measurement: 1, nutrition: 0, intraday: 0, summary: 1, workout: 0, sleep: 0, cgm: 0 };
const resources = ['measurements', 'summaries'];

describeFirstStart({ users: 1_000, requestsPerHour: 2_000, newStreamStart: 'creation', resources, mix });
describeFirstStart({ users: 1_000, requestsPerHour: 2_000, newStreamStart: 'start-of-day', resources, mix });
