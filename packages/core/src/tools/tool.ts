/** Moved to `@rein/define` (the definition API, no server code): this path stays for core's modules and earlier imports. */
export {
  type ApprovalRequirement,
  agentTool,
  type CompensateWith,
  defineTool,
  type ParsedArgs,
  parseToolArguments,
  requirementOf,
  resultText,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  type ToolLogger,
  thrownMessage,
  toolDependency,
  toolSpec,
  toolValueSchema,
} from '@rein/define/internal';
