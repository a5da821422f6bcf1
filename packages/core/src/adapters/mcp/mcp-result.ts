import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import { McpToolError } from '../../shared/errors.js';

/** One content block as text for the model: text as is, binary content as a one-line summary (never its bytes). */
function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType}, ${Math.floor((block.data.length * 3) / 4)} bytes]`;
    case 'resource': {
      const r = block.resource;
      return 'text' in r ? `[resource ${r.uri}]\n${r.text}` : `[resource ${r.uri}${r.mimeType ? ` ${r.mimeType}` : ''}, binary]`;
    }
    case 'resource_link':
      return `[resource link ${block.uri}${block.name ? ` (${block.name})` : ''}]`;
    default:
      return `[${(block as { type: string }).type} content]`;
  }
}

/**
 * An MCP call result as an observation: the structured content when the server gives
 * one (its text blocks only repeat it), else the content blocks in order. `isError`
 * throws, so the executor records a tool error the model can read. Truncation,
 * delimiting and PII masking happen later, as for every tool.
 */
export function mcpObservation(result: CallToolResult): unknown {
  const text = (result.content ?? []).map(blockText).join('\n');
  if (result.isError) throw new McpToolError(text || 'the tool reported an error without saying why');
  return result.structuredContent ?? text;
}
