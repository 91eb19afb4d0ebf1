#!/usr/bin/env node
// The `loupe` command. The core is TypeScript run through tsx, so a clean clone works after `npm ci`
// with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../main/cli/run.ts');
