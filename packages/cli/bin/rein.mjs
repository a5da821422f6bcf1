#!/usr/bin/env node
// The `rein` bin. It is committed (dist/ is not), so `npm install` in a fresh clone links
// node_modules/.bin/rein before anything is built; it runs the built CLI, or says how to build it.
import { existsSync } from 'node:fs';

const main = new URL('../dist/main.js', import.meta.url);
if (!existsSync(main)) {
  console.error('rein: the CLI is not built yet (no packages/cli/dist/main.js): run `npm run build` at the repository root first.');
  process.exit(1);
}
await import(main.href);
