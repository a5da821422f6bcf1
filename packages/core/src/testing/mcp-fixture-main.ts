#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpFixtureServer, McpFixtureState } from './mcp-fixture-server.js';

/**
 * The fixture MCP server over stdio, as a separate process (an app's `{command: 'node',
 * args: [this file]}`). Options for tests about the process itself: `--pid-file` (where
 * it writes its pid), `--effects-file` (where `append_then_die` leaves the effects it
 * applied before it exits), `--mute` (never answers, not even `initialize`) and
 * `--stubborn` (ignores SIGTERM and the end of its stdin: only SIGKILL stops it).
 */
const { values } = parseArgs({
  options: {
    'pid-file': { type: 'string' },
    'effects-file': { type: 'string' },
    mute: { type: 'boolean' },
    stubborn: { type: 'boolean' },
  },
});
if (values['pid-file']) writeFileSync(values['pid-file'], String(process.pid));
if (values.stubborn) {
  process.on('SIGTERM', () => {});
  setInterval(() => {}, 60_000);
}
if (values.mute) process.stdin.resume();
else {
  const state = new McpFixtureState();
  state.die = () => {
    if (values['effects-file']) writeFileSync(values['effects-file'], JSON.stringify(state.effects));
    process.exit(0);
  };
  await createMcpFixtureServer(state).connect(new StdioServerTransport());
}
