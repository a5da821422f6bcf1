import { createHash } from 'node:crypto';

const MAX = 64;

/**
 * `<server>__<tool>` as the model API accepts a function name: characters outside
 * [a-zA-Z0-9_-] become `_`, and a name past 64 characters is cut, ending in a short
 * hash of the original so two long names stay distinct.
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  if (name.length <= MAX) return name;
  const hash = createHash('sha256').update(`${server}__${tool}`).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX - hash.length - 1)}_${hash}`;
}
