import { defineConfig } from 'vite';
import path from 'node:path';

// The renderer is plain React through esbuild's automatic JSX runtime; no Babel plugin is needed.
export default defineConfig({
  root: path.resolve(__dirname, 'renderer'),
  base: './',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: path.resolve(__dirname, 'dist/renderer'),
    emptyOutDir: true,
    sourcemap: true,
    chunkSizeWarningLimit: 2000,
  },
});
