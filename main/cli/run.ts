/** Entry for `node --import tsx main/cli/run.ts …` and bin/loupe.mjs. */
import { main } from './index';

main(process.argv).catch((err: unknown) => {
  process.stderr.write(`loupe: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
