/**
 * A vitest reporter that names each test file as it starts and ends, on stderr. The default reporter only prints a
 * file when it finishes, so when a worker process dies ("Worker exited unexpectedly") the log would not say which
 * file it was running; with this trail the last `start` without an `end` names it.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class FileTrail implements Reporter {
  onTestModuleStart(m: TestModule): void {
    process.stderr.write(`files: start ${m.moduleId.replace(`${process.cwd()}/`, '')}\n`);
  }
  onTestModuleEnd(m: TestModule): void {
    process.stderr.write(`files: end ${m.moduleId.replace(`${process.cwd()}/`, '')} (${m.state()})\n`);
  }
}
