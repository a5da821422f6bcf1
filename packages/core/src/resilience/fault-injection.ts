import { FAULTS_KEY } from '../keys.js';
import type { RedisClient } from '../redis.js';
import type { Tool } from '../tools/tool.js';

/**
 * Chaos testing only (REIN_FAULT_INJECTION=on): wraps a tool so that it hangs while the
 * chaos suite says so — a real hang, cut short only by the tool's own timeout.
 */
export function withFaultInjection(tool: Tool, redis: RedisClient): Tool {
  return {
    ...tool,
    async execute(args, ctx) {
      const until = Number((await redis.hget(FAULTS_KEY, 'toolHangUntil')) ?? 0);
      const wait = until - Date.now();
      if (wait > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          ctx.signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
        });
      }
      return tool.execute(args, ctx);
    },
  };
}
