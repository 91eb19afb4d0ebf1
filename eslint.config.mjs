// Lint, including the layer directions of DESIGN.md §2 (renderer → app/contract; app never reaches
// into main/, native/ or renderer/; app/contract stays free of Node).
import tseslint from 'typescript-eslint';

const node = (names) => names.flatMap((n) => [n, `node:${n}`]);
const NODE_BUILTINS = node(['fs', 'fs/promises', 'path', 'os', 'child_process', 'worker_threads', 'crypto', 'http', 'https', 'net', 'url', 'events', 'stream', 'util', 'zlib', 'module', 'readline', 'process', 'buffer', 'dns', 'tls', 'v8', 'perf_hooks', 'assert', 'timers', 'timers/promises']);

const layer = (files, patterns, paths = []) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns, paths }] },
});

export default tseslint.config(
  { ignores: ['dist/**', 'release/**', 'node_modules/**', 'test-results/**', 'models/**/*.py', '**/*.d.ts'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  layer(['app/**/*.ts'], [
    { group: ['**/main/**', '../main', '../../main'], message: 'Bad layering: app/ must not import main/ (main wires app).' },
    { group: ['**/native/**', '../native', '../../native'], message: 'Bad layering: app/ reaches native/ only through interfaces main wires.' },
    { group: ['**/renderer/**'], message: 'Bad layering: app/ must not import renderer/.' },
    { group: ['electron', 'react', 'react-dom', 'react-dom/*', 'zustand'], message: 'Bad layering: app/ is plain Node (no Electron, React or UI state).' },
  ]),
  layer(['app/contract/**/*.ts'], [
    { group: ['../*', '!./*'], message: 'Bad layering: app/contract imports only itself (and zod).' },
    { group: ['electron', 'react'], message: 'Bad layering: the contract is transport- and UI-free.' },
  ], NODE_BUILTINS.map((name) => ({ name, message: 'Bad layering: app/contract runs in the renderer; no Node imports.' }))),
  layer(['app/contract/domains/**/*.ts'], [
    { group: ['../../*'], message: 'Bad layering: app/contract imports only itself (and zod).' },
    { group: ['electron', 'react'], message: 'Bad layering: the contract is transport- and UI-free.' },
  ], NODE_BUILTINS.map((name) => ({ name, message: 'Bad layering: app/contract runs in the renderer; no Node imports.' }))),
  layer(['renderer/**/*.ts', 'renderer/**/*.tsx'], [
    { group: ['**/app/*', '!**/app/contract', '!**/app/contract/*'], message: 'Bad layering: the renderer talks to the core only through app/contract.' },
    { group: ['**/main/**', '**/native/**'], message: 'Bad layering: the renderer must not import main/ or native/.' },
    { group: ['electron'], message: 'Bad layering: the renderer uses window.loupe via the client, never Electron.' },
  ], NODE_BUILTINS.map((name) => ({ name, message: 'Bad layering: no Node in the renderer.' }))),
  layer(['native/**/*.ts'], [
    { group: ['**/main/**', '**/renderer/**'], message: 'Bad layering: native/ must not import main/ or renderer/.' },
    { group: ['electron', 'react'], message: 'Bad layering: native/ is plain Node.' },
  ]),
);
