/** Moved to `@rein/define` (the definition API, no server code): this path stays for core's modules. */
export {
  CALL_PREFIX,
  callArgumentsSchema,
  checkDelegation,
  type Delegating,
  type Delegation,
  delegationOf,
  delegationSpecs,
  isDelegationName,
  TRANSFER_PREFIX,
  transferArgumentsSchema,
} from '@rein/define/internal';
