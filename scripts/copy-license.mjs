// npm's prepack step of every published package: puts the repository's LICENSE next to
// the package.json being packed, so each tarball carries it (npm always includes LICENSE).
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';

copyFileSync(join(import.meta.dirname, '..', 'LICENSE'), join(process.cwd(), 'LICENSE'));
