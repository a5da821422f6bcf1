/** Moved to `@rein/define` (an app declares its MCP servers with the definition API): this path stays for core's modules and earlier imports. */
export {
  MCP_SERVER_NAME,
  type McpServerConfig,
  type McpServers,
  type McpToolOverride,
  mcpHttpServerSchema,
  mcpServerSchema,
  mcpServersSchema,
  mcpStdioServerSchema,
  mcpToolOverrideSchema,
} from '@rein/define/internal';
