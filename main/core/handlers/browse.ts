import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { browseCalls } from '../../../app/contract';
import type { CoreContext } from '../context';

/** Handlers of the Runs, Sample, Compare and Annotate domain. */
export function browseHandlers(_ctx: CoreContext): DomainHandlers<typeof browseCalls> {
  return {};
}
