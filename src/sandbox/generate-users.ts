/** Builds users (v2 profile + the matching legacy v1 user) from the seeded PRNG. */
import type { Prng } from './prng.ts';
import { EXTREME_TIMEZONES, SOURCES, TIMEZONES } from './sources.ts';
import { isoMillis } from './time.ts';
import type { LegacyUser, User } from './types.ts';

export interface BuiltUser {
  user: User;
  utcOffset: number;
  legacy: LegacyUser;
}

export function buildUser(prng: Prng, uid: string, createdAtMs: number, baseUrl: string): BuiltUser {
  const zone = prng.pick(TIMEZONES);
  const id = prng.hexId();
  const marketplaceToken = prng.hexId();
  // Every user has one wearable and a couple of others; some have a CGM or only mobile-SDK data.
  const wearable = prng.pick(['fitbit', 'garmin_connect']);
  const others = SOURCES.map((s) => s.type).filter(
    (t) => t !== 'fitbit' && t !== 'garmin_connect' && prng.chance(0.4),
  );
  const sources = [wearable, 'withings', ...others.filter((t) => t !== 'withings')];
  const created = isoMillis(createdAtMs);
  return {
    utcOffset: zone.offset,
    user: {
      id,
      uid,
      marketplace: { token: marketplaceToken, url: `${baseUrl}/marketplace/${marketplaceToken}` },
      mobile: { token: prng.hexId().slice(0, 12) },
      location: { timezone: zone.timezone, country_code: zone.country_code },
      status: 'active',
      sources: sources.map((type) => ({ type, connected_at: created })),
      created_at: created,
      updated_at: created,
    },
    legacy: { _id: id, uid, access_token: prng.hexId() + prng.hexId(), created_at: created },
  };
}

export function offsetOfTimezone(timezone: string): number {
  return [...TIMEZONES, ...EXTREME_TIMEZONES].find((z) => z.timezone === timezone)?.offset ?? 0;
}
