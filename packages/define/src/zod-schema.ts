/** The zod Rein reads an app's schemas with: @rein/core's peer dependency. */
export const ZOD_NEEDED = 'zod >= 4.1.5';

/**
 * Why `value` cannot serve as an app's schema, or undefined when it can. Rein reads schemas
 * with zod 4's own functions (JSON Schema for the model, parsing), so a zod 3 schema would
 * fail deep inside them: zod 4 schemas carry `_zod`, zod 3's only `_def`.
 */
export function zodSchemaProblem(value: unknown): string | undefined {
  const schema = value as { _zod?: unknown; _def?: unknown; safeParse?: unknown } | null | undefined;
  if (typeof schema?.safeParse !== 'function') return 'must be a zod schema';
  if (schema._zod) return undefined;
  if (schema._def)
    return `is a zod 3 schema; Rein needs ${ZOD_NEEDED} (install zod@4 next to @rein/core, or on zod 3.25 import { z } from 'zod/v4')`;
  return 'must be a zod schema';
}
