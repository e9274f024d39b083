/**
 * The first start leaves nobody behind, at 10 users and all seven resources, under both readings of
 * where a new stream begins (test/helpers/first-start-scenario.ts says what is run and checked).
 */
import { describeFirstStart } from '../helpers/first-start-scenario.ts';

describeFirstStart({ users: 10, requestsPerHour: 2_000, newStreamStart: 'creation' });
describeFirstStart({ users: 10, requestsPerHour: 2_000, newStreamStart: 'start-of-day' });
