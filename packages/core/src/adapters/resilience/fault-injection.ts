import type { Tool } from '@rein/define/internal';
import { FAULTS_KEY } from '../../shared/keys.js';
import type { RedisClient } from '../redis/redis.js';

/**
 * Chaos testing only (REIN_FAULT_INJECTION=on): wraps a tool so that it hangs while the
 * chaos suite says so — a real hang, cut short only by the tool's own timeout.
 */
export function withFaultInjection(tool: Tool, redis: RedisClient): Tool {
  const hang = async (field: string, signal: AbortSignal) => {
    const until = Number((await redis.hget(FAULTS_KEY, field)) ?? 0);
    const wait = until - Date.now();
    if (wait > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
      });
    }
  };
  const compensate = tool.compensate;
  return {
    ...tool,
    async execute(args, ctx) {
      await hang('toolHangUntil', ctx.signal);
      return tool.execute(args, ctx);
    },
    // `compensateHangUntil` makes undo calls hang (a worker killed mid-compensation).
    ...(compensate
      ? {
          async compensate(args: unknown, result: unknown, ctx: Parameters<Tool['execute']>[1]) {
            await hang('compensateHangUntil', ctx.signal);
            return compensate(args, result, ctx);
          },
        }
      : {}),
  };
}
