// The console's build: Preact through Vite, offline, into the package's dist/console
// (served by console.ts). No inline script or style, so the CSP needs neither.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // The typed client from its source: @rein/client's own tests start the approver, so the
  // approver cannot depend on the built package (a cycle); bundling its source needs no build order.
  resolve: { alias: { '@rein/client': fileURLToPath(new URL('../../../../packages/client/src/index.ts', import.meta.url)) } },
  build: {
    outDir: fileURLToPath(new URL('../../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The preload helper would be an inline-free module anyway; without it nothing is injected into index.html.
    modulePreload: false,
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
});
