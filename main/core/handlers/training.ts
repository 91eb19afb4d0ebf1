/** Handlers of the Training domain: a thin adapter over app/training/service.ts. */
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { trainingCalls } from '../../../app/contract';
import type { TrainingService } from '../../../app/training/service';

export function trainingHandlers(training: TrainingService): DomainHandlers<typeof trainingCalls> {
  return {
    'training:templates': ({ recheck }) => training.templates(recheck === true),
    'training:render': (req) => training.render(req),
    'training:connectors': () => training.connectors(),
    'training:connectorSave': (req) => training.connectorSave(req),
    'training:connectorDelete': (req) => training.connectorDelete(req),
    'training:connectorProbe': (req) => training.connectorProbe(req),
    'training:secretSet': (req) => training.secretSet(req),
    'training:secretDelete': (req) => training.secretDelete(req),
    'training:submit': (req) => training.submit(req),
    'training:jobs': () => training.jobs(),
    'training:open': (req) => training.open(req),
    'training:cancel': (req) => training.cancel(req),
    'training:evalCommand': (req) => training.evalCommand(req),
  };
}
