/** Moved to `@rein/define`: this path stays for core's modules and earlier imports. */
export { ZOD_NEEDED, zodSchemaProblem } from '@rein/define/internal';
