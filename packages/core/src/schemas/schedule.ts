/** Moved to `@rein/contract`: this path stays for core's modules and earlier imports. */
export * from '@rein/contract';
