import type { StepRecord } from '@rein/contract';
import { defineTool, type Tool } from '@rein/define/internal';
import { z } from 'zod';
import { ToolError } from '../../shared/errors.js';
import { parseHandle, READ_RESULT_TOOL } from './context-policy.js';

/** Where `read_result` finds a result: the run's committed step records (the full text is kept there). */
export interface StepRecordReader {
  stepRecord(runId: string, index: number): Promise<StepRecord | null>;
}

/**
 * The built-in read tool of agents with a context policy: the full text of a summarised
 * tool result (or a slice) by its handle. Only the caller's own run is ever read.
 */
export function createReadResultTool(steps: StepRecordReader): Tool {
  return defineTool({
    name: READ_RESULT_TOOL,
    description:
      'Fetch the full text of a tool result that reached you only as a summary, by its handle; give offset and length to read a slice of it.',
    kind: 'read',
    parameters: z.object({
      handle: z.string().min(3).max(140).describe('The handle of the summarised result, e.g. "0:call_0_0"'),
      offset: z.number().int().min(0).optional().describe('First character to return (default 0)'),
      length: z.number().int().min(1).optional().describe('How many characters to return (default: to the end)'),
    }),
    honoursIdempotencyKey: true,
    async execute({ handle, offset, length }, ctx) {
      const at = parseHandle(handle);
      const result = at ? (await steps.stepRecord(ctx.runId, at.step))?.toolCalls.find((c) => c.id === at.toolCallId) : undefined;
      if (!result) throw new ToolError('unknown_handle', `no tool result of this run has the handle "${handle}"`);
      const from = offset ?? 0;
      return result.observation.slice(from, length === undefined ? undefined : from + length);
    },
  });
}
