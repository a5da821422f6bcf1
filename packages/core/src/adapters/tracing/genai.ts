import { type Attributes, SpanKind } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
} from '@opentelemetry/semantic-conventions/incubating';
import type { ModelToolCall, ToolCallRecord } from '@rein/contract';
import type { ModelReply, ModelRequest } from '../model/model-gateway.js';
import { REIN_ATTR } from './rein-spans.js';
import { inSpan } from './spans.js';

/**
 * Turns prompt, completion and tool payloads into span attributes. Absent (the default),
 * contents never leave the process; an operator opts in with REIN_OTEL_CAPTURE_CONTENT,
 * and then they are PII-masked like log lines.
 */
export type CaptureContent = (value: unknown) => string;

/**
 * A `chat <model>` span (GenAI semantic conventions) around one model call. `provider` is
 * the configured provider's name (a REIN_PROVIDERS key, or `openai` for OPENAI_BASE_URL):
 * every endpoint speaks the OpenAI API, but who answers is what an operator filters on.
 */
export function chatSpan(
  model: string,
  provider: string,
  request: ModelRequest,
  capture: CaptureContent | undefined,
  call: () => Promise<ModelReply>,
) {
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
    [ATTR_GEN_AI_PROVIDER_NAME]: provider,
    [ATTR_GEN_AI_REQUEST_MODEL]: model,
    [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: request.maxTokens,
  };
  return inSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    // Contents are masked and serialised only for a span that will be exported.
    const keep = capture && span.isRecording() ? capture : undefined;
    if (keep) span.setAttribute(ATTR_GEN_AI_INPUT_MESSAGES, keep(request.messages));
    const reply = await call();
    span.setAttributes({
      [ATTR_GEN_AI_RESPONSE_MODEL]: reply.model,
      [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: reply.usage.promptTokens,
      [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: reply.usage.completionTokens,
      ...(reply.finishReasons ? { [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: reply.finishReasons } : {}),
      ...(keep ? { [ATTR_GEN_AI_OUTPUT_MESSAGES]: keep({ content: reply.content, toolCalls: reply.toolCalls }) } : {}),
    });
    return reply;
  });
}

/** An `execute_tool <tool>` span around one model-requested tool call, whatever it turns into. */
export function toolSpan<T extends { record: ToolCallRecord }>(
  call: ModelToolCall,
  capture: CaptureContent | undefined,
  run: () => Promise<T>,
): Promise<T> {
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
    [ATTR_GEN_AI_TOOL_NAME]: call.name,
    [ATTR_GEN_AI_TOOL_CALL_ID]: call.id,
    [ATTR_GEN_AI_TOOL_TYPE]: 'function',
  };
  return inSpan(`execute_tool ${call.name}`, { attributes }, async (span) => {
    const keep = capture && span.isRecording() ? capture : undefined;
    if (keep) span.setAttribute(ATTR_GEN_AI_TOOL_CALL_ARGUMENTS, keep(call.arguments));
    const result = await run();
    span.setAttributes({
      [REIN_ATTR.toolOutcome]: result.record.outcome,
      ...(result.record.approvalId ? { [REIN_ATTR.approvalId]: result.record.approvalId } : {}),
      ...(keep ? { [ATTR_GEN_AI_TOOL_CALL_RESULT]: keep(result.record.observation) } : {}),
    });
    return result;
  });
}
