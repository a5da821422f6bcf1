/** Moved to `@rein/contract`: this path stays for core's modules. */
export * from '@rein/contract';
