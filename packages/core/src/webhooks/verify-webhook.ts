/** Moved to `@rein/contract` (browser-safe, what `@rein/client` exports): `@rein/core/verify-webhook` stays. */
export { verifyWebhook } from '@rein/contract';
