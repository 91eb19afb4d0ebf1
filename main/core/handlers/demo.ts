/** Handlers of the Demo domain: a thin adapter over app/demo/service.ts. */
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { demoCalls } from '../../../app/contract';
import type { DemoService } from '../../../app/demo/service';

export { editedCall } from '../../../app/demo/service';

export function demoHandlers(demo: DemoService): DomainHandlers<typeof demoCalls> {
  return {
    'demo:import': (req) => demo.importMedia(req),
    'demo:examples': () => demo.examples(),
    'demo:replaySources': () => demo.replaySources(),
    'demo:run': (req) => demo.run(req),
    'demo:stop': (req) => demo.stop(req),
    'demo:continue': (req) => demo.continue(req),
    'demo:get': (req) => demo.get(req),
    'demo:export': (req) => demo.export(req),
    'demo:scratch': () => demo.scratchList(),
    'demo:save': (req) => demo.save(req),
    'demo:discard': (req) => demo.discard(req),
    'demo:runPair': (req) => demo.runPair(req),
    'demo:pair': (req) => demo.pair(req),
    'demo:savePair': (req) => demo.savePair(req),
    'demo:exportPair': (req) => demo.exportPair(req),
  };
}
