// Copies non-TypeScript assets (Lua scripts, SQL migrations, JSON data, web pages) from src to dist,
// keeping their relative paths, so built packages find them next to their modules.
import { cpSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const [from, to] = process.argv.slice(2);
const assets = /\.(lua|json|html|css|js|sql)$/;
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (assets.test(name) && !name.endsWith('.d.ts')) cpSync(path, join(to, path.slice(from.length)));
  }
};
walk(from);
