/** Handlers of the Models domain: a thin adapter over app/engines/models.ts. */
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { modelsCalls } from '../../../app/contract';
import type { DeviceReport } from '../../../app/contract';
import type { ModelService } from '../../../app/engines/models';

/** `detectDevices` is native/engine/devices.ts's, handed in by the composition root. */
export function modelsHandlers(models: ModelService, detectDevices: (fresh?: boolean) => Promise<DeviceReport>): DomainHandlers<typeof modelsCalls> {
  return {
    'models:list': () => models.list(),
    'models:validate': ({ path }) => models.validate(path),
    'models:add': ({ path }) => models.add(path),
    'models:remove': ({ id }) => models.remove(id),
    'models:load': ({ id, device, dtype }) => models.load(id, device, dtype),
    'models:unload': () => models.unload(),
    'models:devices': ({ fresh }) => detectDevices(fresh === true),
  };
}
