/**
 * The dialect registry. `pixel-reasoner` is the default.
 */
import { deepEyesDialect } from './deepEyes';
import { pixelReasonerDialect } from './pixelReasoner';
import type { Dialect, DialectId } from './types';
import { verlToolDialect } from './verlTool';

export const DEFAULT_DIALECT: DialectId = 'pixel-reasoner';

export const DIALECTS: Readonly<Record<DialectId, Dialect>> = {
  'pixel-reasoner': pixelReasonerDialect,
  'verl-tool': verlToolDialect,
  deepeyes: deepEyesDialect,
};

export function isDialectId(id: string): id is DialectId {
  return Object.hasOwn(DIALECTS, id);
}

/** The dialect for `id` (default Pixel Reasoner); an unknown id is an error that lists the known ones. */
export function getDialect(id: string = DEFAULT_DIALECT): Dialect {
  if (!isDialectId(id)) {
    throw new Error(`unknown dialect "${id}": use one of ${Object.keys(DIALECTS).join(', ')}`);
  }
  return DIALECTS[id];
}

export { pixelReasonerDialect, verlToolDialect, deepEyesDialect };
export type * from './types';
