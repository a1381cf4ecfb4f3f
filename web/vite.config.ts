// The dashboard's build (docs/dashboard.md): web/ → dist/dashboard/, served by the admin
// listener at /dashboard/. Preact's JSX is compiled by esbuild directly (no Babel preset);
// file names under assets/ carry a content hash, so the listener may cache them for good.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // Every browser that runs ES2022 modules supports modulepreload; the polyfill is dead weight.
    modulePreload: { polyfill: false },
    // No inline <script>/<style> anywhere: the page runs under script-src 'self'.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 200,
  },
  logLevel: 'warn',
});
