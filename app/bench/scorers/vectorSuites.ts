/**
 * Golden-vector adapters: each suite name of `reference/vectors/public.json` that this area owns maps to a
 * function from the case's `input` to a value deep-equal to its `expected` (IEEE doubles compared exactly;
 * non-finite doubles written as the strings "NaN" / "Infinity" / "-Infinity").
 * The vector runner (another module) imports `scorerSuites`.
 */
import { anlsCompute } from './anls';
import { mcVsiCompute } from './mcVsi';
import { mcVstarCompute } from './mcVstar';
import { mraCompute } from './mra';
import { prBoxedTrace } from './prBoxed';
import { tallyqaCompute } from './tallyqa';

/** Replace non-finite numbers by the vector file's string spellings, recursively. */
export function encodeNonFinite(v: unknown): unknown {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (v === Infinity) return 'Infinity';
    if (v === -Infinity) return '-Infinity';
    return v;
  }
  if (Array.isArray(v)) return v.map(encodeNonFinite);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = encodeNonFinite(x);
    return out;
  }
  return v;
}

/** Read a vector-file double: the strings "NaN"/"Infinity"/"-Infinity" stand for non-finite values. */
export function decodeNumber(v: unknown): unknown {
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  return v;
}

function field<T>(input: unknown, key: string, check: (v: unknown) => v is T, what: string): T {
  if (input === null || typeof input !== 'object') throw new TypeError(`vector input must be an object, got ${JSON.stringify(input)}`);
  const v = (input as Record<string, unknown>)[key];
  if (!check(v)) throw new TypeError(`vector input field '${key}' must be ${what}, got ${JSON.stringify(v)}`);
  return v;
}
const isString = (v: unknown): v is string => typeof v === 'string';
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);
const isAny = (v: unknown): v is unknown => v !== undefined;
const isNumberLike = (v: unknown): v is number | string => typeof v === 'number' || v === 'NaN' || v === 'Infinity' || v === '-Infinity';

// The runner hands over parsed JSON of any shape; each entry validates its own input (see `field`).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const scorerSuites: Record<string, (input: any) => unknown> = {
  anls: (input) => encodeNonFinite(anlsCompute(field(input, 'references', isStringArray, 'a list of strings'), field(input, 'prediction', isString, 'a string'))),
  mra: (input) => encodeNonFinite(mraCompute(field(input, 'prediction', isString, 'a string'), field(input, 'groundTruth', isString, 'a string'))),
  tallyqa: (input) => {
    // The prediction is a string or a number; a number spelled "NaN"/"Infinity" in the file reads the same
    // either way (text_to_int gives None for both the float and the string).
    const prediction = field(input, 'prediction', isAny, 'a string or a number');
    const answer = decodeNumber(field(input, 'answer', isNumberLike, 'a number')) as number;
    return encodeNonFinite(tallyqaCompute(prediction, answer));
  },
  mc_vstar: (input) => encodeNonFinite(mcVstarCompute(field(input, 'response', isString, 'a string'), field(input, 'label', isString, 'a string'))),
  mc_vsi: (input) => encodeNonFinite(mcVsiCompute(field(input, 'prediction', isString, 'a string'), field(input, 'groundTruth', isString, 'a string'))),
  pr_boxed: (input) => encodeNonFinite(prBoxedTrace(field(input, 'qaText', isString, 'a string'), field(input, 'gt', isAny, 'a string, an int or a list of strings'))),
};
