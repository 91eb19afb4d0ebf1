import type { ContractError } from './index';

/**
 * Thrown on the client side when a call fails. A module of its own (no zod): the renderer's transports import it,
 * and importing it from the contract's index would build every schema of the contract when the page starts.
 */
export class LoupeCallError extends Error {
  readonly code: ContractError['code'];
  readonly issues: ContractError['issues'];
  constructor(err: ContractError) {
    super(err.message);
    this.name = 'LoupeCallError';
    this.code = err.code;
    this.issues = err.issues;
  }
}
