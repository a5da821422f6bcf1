import { type Principal, roleSchema } from '@rein/contract';
import { z } from 'zod';
import { tenantKeys } from '../../shared/keys.js';
import type { RedisClient } from './redis.js';

const signInSchema = z.object({ roles: z.array(roleSchema), at: z.number().int() });
/** The roles a person's latest verified token carried, and when it was verified (ms). */
export type SignIn = z.infer<typeof signInSchema>;

/** The latest company sign-in of each person, per tenant (one hash per tenant). */
export class SignInStore {
  constructor(private readonly redis: RedisClient) {}

  async record(p: Principal, at: number): Promise<void> {
    await this.redis.hset(tenantKeys(p.tenantId).signIns, p.userId, JSON.stringify({ roles: p.roles, at }));
  }

  async get(tenantId: string, userId: string): Promise<SignIn | null> {
    const raw = await this.redis.hget(tenantKeys(tenantId).signIns, userId);
    if (raw === null) return null;
    try {
      const parsed = signInSchema.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }
}
