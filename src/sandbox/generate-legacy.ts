/** Builds legacy (v1) records of every standard object from the seeded PRNG. */
import type { Prng } from './prng.ts';
import { formatOffset, isoSeconds } from './time.ts';
import type { LegacyObject, LegacyRecord } from './types.ts';

const HOUR = 3_600_000;

const SOURCE_NAMES: Record<string, string> = {
  fitbit: 'Fitbit',
  garmin_connect: 'Garmin Connect',
  withings: 'Withings',
  omron: 'Omron',
  myfitnesspal: 'MyFitnessPal',
  dexcom: 'Dexcom',
  sandbox_partner: 'Sandbox Partner App',
};

export function sourceDisplayName(source: string): string {
  return SOURCE_NAMES[source] ?? source;
}

/** Object-specific fields (the spec shows fitness, routine and nutrition; the others follow v1 docs). */
export function legacyFields(prng: Prng, object: LegacyObject, timestampMs: number): Record<string, unknown> {
  switch (object) {
    case 'fitness':
      return {
        type: prng.pick(['Running', 'Walking', 'Cycling', 'Swimming']),
        intensity: prng.pick(['low', 'medium', 'high']),
        start_time: isoSeconds(timestampMs),
        distance: prng.int(500, 15000),
        duration: prng.int(600, 5400),
        calories: prng.int(80, 900),
        activity_category: prng.pick(['Cardiovascular', 'Strength', 'Walking']),
      };
    case 'routine':
      return {
        steps: prng.int(1000, 18000),
        distance: prng.int(800, 14000),
        floors: prng.int(0, 25),
        elevation: prng.int(0, 90),
        calories_burned: prng.int(1500, 3500),
      };
    case 'nutrition':
      return {
        calories: prng.int(100, 900),
        carbohydrates: prng.int(5, 120),
        fat: prng.int(1, 60),
        fiber: prng.int(0, 15),
        protein: prng.int(1, 60),
        sodium: prng.int(10, 2000),
        water: prng.int(0, 750),
        meal: prng.pick(['Breakfast', 'Lunch', 'Dinner', 'Snack']),
      };
    case 'sleep':
      return {
        total_sleep: prng.int(300, 540),
        awake: prng.int(0, 60),
        deep: prng.int(40, 120),
        light: prng.int(100, 300),
        rem: prng.int(40, 120),
        times_woken: prng.int(0, 6),
      };
    case 'weight': {
      const weight = 55 + prng.int(0, 500) / 10;
      return { weight, height: 170, bmi: Number((weight / 2.89).toFixed(1)), fat_percent: prng.int(10, 35) };
    }
    case 'diabetes':
      return {
        blood_glucose: prng.int(70, 190),
        relationship_to_meal: prng.pick(['before', 'after', 'random', 'fasting']),
        insulin: prng.int(0, 12),
      };
    case 'biometrics':
      return {
        systolic: prng.int(105, 150),
        diastolic: prng.int(65, 95),
        resting_heartrate: prng.int(50, 90),
        temperature: 36 + prng.int(0, 15) / 10,
      };
    case 'tobacco_cessation':
      return {
        cigarettes_allowed: prng.int(0, 10),
        cigarettes_smoked: prng.int(0, 10),
        cravings: prng.int(0, 8),
      };
  }
}

export function buildLegacyRecord(
  prng: Prng,
  object: LegacyObject,
  userId: string,
  dayMs: number,
  utcOffsetSeconds: number,
  lastUpdatedMs: number,
  source: string,
): LegacyRecord {
  // Routine aggregates a day: its timestamp is local midnight expressed in UTC.
  const timestampMs =
    object === 'routine'
      ? dayMs - utcOffsetSeconds * 1000
      : dayMs + prng.int(6, 21) * HOUR - utcOffsetSeconds * 1000;
  const id = prng.hexId();
  return {
    _id: id,
    user_id: userId,
    timestamp: isoSeconds(timestampMs),
    utc_offset: formatOffset(utcOffsetSeconds),
    activity_id:
      object === 'routine'
        ? `routine-${userId.slice(0, 8)}-${isoSeconds(timestampMs).slice(0, 10)}`
        : id.slice(0, 16),
    source,
    source_name: sourceDisplayName(source),
    validated: prng.chance(0.8),
    last_updated: isoSeconds(Math.max(lastUpdatedMs, timestampMs)),
    extras: { sandbox_seq: prng.int(1, 1_000_000) },
    ...legacyFields(prng, object, timestampMs),
  };
}
