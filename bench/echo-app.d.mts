export declare const ECHO_PROMPT: string;
export declare const ECHO_TOOLS: unknown[];
declare const app: unknown;
export default app;
