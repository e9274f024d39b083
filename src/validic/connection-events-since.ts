/** The platform keeps connection events captured on or after this date only (PLATFORM-FACTS.md). */
export const CONNECTION_EVENTS_SINCE = '2025-07-01';
