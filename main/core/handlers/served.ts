/** Handlers of the served-engine domain: a thin adapter over the core's one ServedEngineLauncher. */
import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { servedCalls } from '../../../app/contract';
import type { Connector } from '../../../app/connectors';
import { SlurmSshConnector } from '../../../app/connectors/slurm';
import { dialectPixelBounds } from '../../../app/engines/served/commands';
import type { ServedEngineLauncher, ServedPlacement } from '../../../app/engines/served/launcher';

/** `connector` is the training service's lookup of a saved connector by name. */
export function servedHandlers(launcher: ServedEngineLauncher, connector: (name: string) => Promise<Connector>): DomainHandlers<typeof servedCalls> {
  return {
    'served:start': async ({ where, ...spec }) => {
      let placement: ServedPlacement = { kind: 'local' };
      if (where.kind === 'slurm') {
        const c = await connector(where.connector);
        if (!(c instanceof SlurmSshConnector)) {
          throw new Error(`connector ${JSON.stringify(where.connector)} is a ${c.kind} connector; a served engine runs as a job through a Slurm connector over SSH (slurm-ssh), which can also open the tunnel to it`);
        }
        const resources = { ...(where.cpus ? { cpus: where.cpus } : {}), ...(where.gpus ? { gpus: where.gpus } : {}), ...(where.timeMinutes ? { timeLimitMin: where.timeMinutes } : {}) };
        placement = { kind: 'slurm', connector: c, resources, ...(where.cwd ? { cwd: where.cwd } : {}) };
      }
      // The launcher validates the spec (field-named messages) before anything starts.
      const e = launcher.start(spec, placement);
      return e.state();
    },
    'served:stop': async ({ id }) => ({ stopped: await launcher.stop(id) }),
    'served:list': () => ({ engines: launcher.list() }),
    'served:log': ({ id, lines }) => {
      const e = launcher.get(id);
      if (!e) throw new Error(`no served engine ${JSON.stringify(id)} (stopped engines are forgotten)`);
      return { lines: e.log.slice(-lines) };
    },
    'served:bounds': ({ mode }) => dialectPixelBounds(mode),
  };
}
