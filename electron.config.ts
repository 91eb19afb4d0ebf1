/**
 * electron-builder configuration (`npm run dist`, Node ≥ 22.12 with the Electron binary installed).
 * What ships: the production bundles (dist/main/electron/*.cjs, dist/workers/*.cjs), the built renderer and the
 * runtime node_modules; no TypeScript sources, tests, source maps or tsx. The bundled models go beside the asar in
 * resources/models (app/paths.ts finds them there). Native modules (sharp with its @img/* binaries,
 * onnxruntime-node) are unpacked from the asar because they dlopen files by path; onnxruntime-node keeps only the
 * target platform's binaries, and onnxruntime-web (a browser runtime; transformers.js's Node build does not load
 * it) is left out. tests/unit/electron/packaging.test.ts checks the resulting layout with electron-builder's own
 * file matcher.
 */
import type { Configuration } from 'electron-builder';

/** Left out of the app wherever they sit (sources, tests, maps, docs and build inputs of dependencies). */
export const EXCLUDES = [
  '!**/*.map',
  '!**/*.ts',
  '!**/*.tsx',
  '!**/*.test.*',
  '!**/{test,tests,__tests__,example,examples,docs,.github}/**',
  '!**/*.{md,markdown}',
  '!**/{CHANGELOG,HISTORY,AUTHORS}*',
  '!node_modules/tsx/**',
  '!node_modules/esbuild/**',
  '!node_modules/@esbuild/**',
  '!node_modules/fast-check/**',
  '!node_modules/onnxruntime-web/**',
  // Only the target platform's and architecture's onnxruntime binaries.
  '!node_modules/onnxruntime-node/bin/napi-v*/!(${platform})/**',
  '!node_modules/onnxruntime-node/bin/napi-v*/${platform}/!(${arch})/**',
];

const config: Configuration = {
  appId: 'dev.loupe.app',
  productName: 'Loupe',
  directories: { output: 'release', buildResources: 'build' },
  // Runtime node_modules (dependencies, not devDependencies) are added by electron-builder; EXCLUDES apply to them too.
  files: ['dist/main/electron/*.cjs', 'dist/workers/*.cjs', 'dist/renderer/**/*', 'package.json', ...EXCLUDES],
  // The bundled models (weights, tokenizer, examples) beside the asar, never the training code next to them.
  extraResources: [
    { from: 'models/loupe-tiny/model', to: 'models/loupe-tiny/model', filter: ['**/*'] },
    { from: 'models/loupe-tiny/examples', to: 'models/loupe-tiny/examples', filter: ['**/*', '!README.md'] },
    { from: 'models/tiny-random-qwen25vl', to: 'models/tiny-random-qwen25vl', filter: ['**/*', '!**/*.py', '!**/__pycache__/**', '!README.md'] },
    // The PyVision sandbox bind-mounts its worker, so it ships as a real file (app/paths.ts sandboxWorkerPy).
    { from: 'native/pysandbox', to: 'native/pysandbox', filter: ['worker.py'] },
  ],
  asar: true,
  asarUnpack: ['node_modules/sharp/**/*', 'node_modules/@img/**/*', 'node_modules/onnxruntime-node/**/*', 'node_modules/onnxruntime-common/**/*'],
  // The source maps and TypeScript are not shipped, so nothing needs rebuilding from them; native modules ship prebuilt.
  npmRebuild: false,
  electronFuses: {
    runAsNode: false,
    enableCookieEncryption: true,
    enableNodeOptionsEnvironmentVariable: false,
    enableNodeCliInspectArguments: false,
    enableEmbeddedAsarIntegrityValidation: true,
    onlyLoadAppFromAsar: true,
    // The renderer is served from app://, never file://.
    grantFileProtocolExtraPrivileges: false,
  },
  linux: { target: ['AppImage', 'deb'], category: 'Science', maintainer: 'Loupe developers' },
  mac: { target: ['dmg'], category: 'public.app-category.developer-tools' },
  win: { target: ['nsis'] },
  nsis: { oneClick: false, allowToChangeInstallationDirectory: true },
};

export default config;
