import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent, defineApp } from '@rein/core';

/**
 * The folder the filesystem server may touch: a scratch folder under the system's temp
 * directory (or MCP_FILES_DIR). Every worker and the approver start their own server
 * process on the same folder, so it must be the same path for all of them.
 */
const folder = process.env.MCP_FILES_DIR ?? join(tmpdir(), 'rein-mcp-filesystem');
mkdirSync(folder, { recursive: true });

/** The reference filesystem MCP server, installed from npm with this app; run over stdio by each process. */
const server = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

export const fileClerk = defineAgent({
  name: 'file-clerk',
  instructions: `You keep notes as text files in ${folder}. List the folder first, read before you change a file, and give full paths inside it.`,
  // MCP tools are named <server>__<tool>; the allow-list names them like native tools.
  tools: ['files__list_directory', 'files__read_text_file', 'files__write_file'],
  limits: { maxSteps: 6 },
});

/**
 * An app whose tools all come from an MCP server. The server's annotations govern them:
 * list and read are read-only (no approval); write_file is destructive, so every write
 * waits for a supervisor — here lowered, for a scratch folder, to an approver.
 */
export default defineApp({
  agents: [fileClerk],
  tools: [],
  mcpServers: {
    files: {
      command: process.execPath,
      args: [server, folder],
      tools: { write_file: { approval: { risk: 'high', requiredRole: 'approver' } } },
    },
  },
});
