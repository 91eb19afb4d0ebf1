import type { DomainHandlers } from '../../../app/contract/dispatch';
import type { demoCalls } from '../../../app/contract';
import type { CoreContext } from '../context';

/** Handlers of the Demo and Models domain. */
export function demoHandlers(_ctx: CoreContext): DomainHandlers<typeof demoCalls> {
  return {};
}
