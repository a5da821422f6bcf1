import { z } from 'zod';
/**
 * An app version: what `defineApp({version})` or `REIN_APP_VERSION` sets (an image tag, a
 * commit) or the content version Rein derives (`c-<12 hex>`). It names Redis keys and
 * queues and is a metrics label, so it is short and plain: no `{`, `}`, `:` or spaces.
 */
export const appVersionSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'an app version is 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit');
export type AppVersion = z.infer<typeof appVersionSchema>;

/** Per agent: whether its runs stay on the version they started with (default) or follow the current one at each step. */
export const versioningSchema = z.enum(['pinned', 'upgrade']);
export type Versioning = z.infer<typeof versioningSchema>;
