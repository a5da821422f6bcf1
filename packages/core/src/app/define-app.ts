import type { RedisClient } from '../redis.js';

/** Moved to `@rein/define` (the definition API, no server code): this path stays for core's modules and earlier imports. */
export {
  type App,
  type AppDefinition,
  type AppServices,
  buildTools,
  checkTools,
  defineApp,
  isApp,
} from '@rein/define/internal';

// The server fills in what `@rein/define` leaves open: an app's tool factory gets ioredis's client.
declare module '@rein/define/internal' {
  interface AppServiceTypes {
    redis: RedisClient;
  }
}
