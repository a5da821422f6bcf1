#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpFixtureServer, McpFixtureState } from './mcp-fixture-server.js';

/** The fixture MCP server over stdio, as a separate process (an app's `{command: 'node', args: [this file]}`). */
await createMcpFixtureServer(new McpFixtureState()).connect(new StdioServerTransport());
