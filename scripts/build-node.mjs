// Bundles the Electron main and preload to CommonJS (the sandboxed preload must be CJS).
// node_modules stay external: electron-builder ships them (sharp and onnxruntime-node unpacked).
import { build } from 'esbuild';

const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', sourcemap: true, packages: 'external', logLevel: 'warning' };
await build({ ...common, entryPoints: ['main/electron/main.ts'], outfile: 'dist/main/electron/main.cjs', external: ['electron'] });
await build({ ...common, entryPoints: ['main/electron/preload.ts'], outfile: 'dist/main/electron/preload.cjs', external: ['electron'] });
console.log('built dist/main/electron/{main,preload}.cjs');
