/** The legacy (v1) standard objects; `tobacco_cessation` is known to older clients only. */
import { UsageError } from '../errors/index.ts';

export const LEGACY_OBJECTS = [
  'fitness',
  'routine',
  'nutrition',
  'sleep',
  'weight',
  'diabetes',
  'biometrics',
  'tobacco_cessation',
] as const;
export type LegacyObject = (typeof LEGACY_OBJECTS)[number];

export function toLegacyObject(name: string): LegacyObject {
  const object = name.trim().toLowerCase();
  if (!(LEGACY_OBJECTS as readonly string[]).includes(object)) {
    throw new UsageError(
      `unknown legacy object "${name}"`,
      `use one or more of: ${LEGACY_OBJECTS.join(', ')}`,
    );
  }
  return object as LegacyObject;
}
