/**
 * The date fields of job payloads, one schema each, so every job reads and rejects dates alike.
 * Calendar dates are UTC days as text (they compare as text); instants carry their offset.
 */
import { z } from 'zod';

/** A calendar day, `YYYY-MM-DD`. */
export const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD');

/** An ISO 8601 instant with `Z` or an offset. */
export const isoInstant = z.iso.datetime({ offset: true });
