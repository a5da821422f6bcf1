#!/usr/bin/env node
// `npm run watch -- <runId>`: follows a run live (server-sent events, resumed with
// Last-Event-ID if the connection drops), rendered as a ReAct trace. The same as `rein watch <runId>`.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const rein = createRequire(import.meta.url)
  .resolve('@rein/cli')
  .replace(/index\.js$/, 'main.js');
process.exit(spawnSync(process.execPath, [rein, 'watch', ...process.argv.slice(2)], { stdio: 'inherit' }).status ?? 1);
