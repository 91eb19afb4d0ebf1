/**
 * electron-builder configuration (`npm run dist`). Native modules (sharp with its @img/* binaries,
 * onnxruntime-node) are unpacked from the asar because they dlopen files by path.
 */
import type { Configuration } from 'electron-builder';

const config: Configuration = {
  appId: 'dev.loupe.app',
  productName: 'Loupe',
  directories: { output: 'release', buildResources: 'build' },
  files: ['dist/**/*', 'app/**/*', 'main/**/*', 'native/**/*', 'package.json', '!**/*.test.ts', '!**/*.map'],
  extraResources: [{ from: 'models', to: 'models', filter: ['**/*', '!**/__pycache__/**'] }],
  asar: true,
  asarUnpack: ['node_modules/sharp/**/*', 'node_modules/@img/**/*', 'node_modules/onnxruntime-node/**/*', 'node_modules/onnxruntime-common/**/*'],
  linux: { target: ['AppImage', 'deb'], category: 'Science', maintainer: 'Loupe developers' },
  mac: { target: ['dmg'], category: 'public.app-category.developer-tools' },
  win: { target: ['nsis'] },
  nsis: { oneClick: false, allowToChangeInstallationDirectory: true },
};

export default config;
