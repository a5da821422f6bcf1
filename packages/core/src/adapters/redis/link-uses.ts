import { linkUseKey } from '../../shared/keys.js';
import type { RedisClient } from './redis.js';

/** The spent nonces of one-click links: SET NX makes a link's use atomic, fleet-wide. */
export class LinkUses {
  constructor(private readonly redis: RedisClient) {}

  /** Spends the nonce; false when it was spent already. Kept until the link would have expired anyway. */
  async claim(nonce: string, untilMs: number, now = Date.now()): Promise<boolean> {
    return (await this.redis.set(linkUseKey(nonce), '1', 'PX', Math.max(1, untilMs - now + 60_000), 'NX')) === 'OK';
  }

  async spent(nonce: string): Promise<boolean> {
    return (await this.redis.exists(linkUseKey(nonce))) === 1;
  }
}
