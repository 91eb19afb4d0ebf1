/**
 * What a test needs that the machine may lack, and what happens when it is missing.
 *
 * A test that cannot run says why in one line. When `npm test` provides the missing piece itself (a Debian package it
 * installs, a service it starts: `provisioned`), a skip would hide a broken set-up, so under CI=true it is a failure
 * instead. Only what no package of this machine provides (e.g. Hugging Face transformers on Debian) may skip in CI.
 */
import { describe, it } from 'vitest';

export interface Requirement {
  /** What is needed, e.g. "Slurm, slurmrestd and sshd". */
  what: string;
  /** One line: why it is missing here and what to run. */
  reason: string;
  /** True when `npm test` installs or starts it: then CI must not skip. */
  provisioned: boolean;
}

/** CI=true: the test command has provisioned everything it can, so a skip of a provisioned requirement fails. */
export const strictSkips = process.env.CI === 'true';

function skipLine(name: string, need: Requirement): string {
  return `[skip] ${name}: needs ${need.what}: ${need.reason}`;
}

function missingLine(name: string, need: Requirement): string {
  return `${name}: needs ${need.what}: ${need.reason} (CI=true: npm test provides this, so it must not be missing)`;
}

/** `describe` when `ok`; otherwise a one-line skip, or under CI=true a failing test with that line. */
export function describeIf(ok: boolean, need: Requirement, name: string, body: () => void): void {
  if (ok) {
    describe(name, body);
  } else if (strictSkips && need.provisioned) {
    describe(name, () => {
      it(`needs ${need.what}`, () => {
        throw new Error(missingLine(name, need));
      });
    });
  } else {
    console.warn(skipLine(name, need));
    describe.skip(name, body);
  }
}

/** Inside a test: skip with the one-line reason, or under CI=true fail with it. */
export function skipUnless(ctx: { skip: (note?: string) => void; task: { name: string } }, ok: boolean, need: Requirement): void {
  if (ok) return;
  if (strictSkips && need.provisioned) throw new Error(missingLine(ctx.task.name, need));
  const line = skipLine(ctx.task.name, need);
  console.warn(line);
  ctx.skip(line);
}
