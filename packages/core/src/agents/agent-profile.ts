/** Moved to `@rein/define` (the definition API, no server code): this path stays for core's modules and earlier imports. */
export {
  AgentCatalog,
  type AgentDefinition,
  type AgentProfile,
  type CompensationPolicy,
  compensationPolicySchema,
  defineAgent,
  HANDOFF_ANSWER,
} from '@rein/define/internal';
