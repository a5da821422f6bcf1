/**
 * `@rein/core/schemas`: the HTTP contract, which lives in `@rein/contract` (schemas, error
 * codes, webhook verification, no server code). Kept so earlier imports keep working.
 */
export * from '@rein/contract';
