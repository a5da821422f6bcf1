import { type Logger, pino } from 'pino';

/**
 * Redaction paths are static: secrets and PII-bearing fields never reach a log line,
 * whatever the caller passes. Model prompts and tool arguments are not logged at all.
 */
const REDACT = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'apiKey',
  '*.apiKey',
  'key',
  'OPENAI_API_KEY',
  'REIN_API_KEYS',
  'arguments',
  '*.arguments',
  'input',
  'messages',
];

export function createLogger(level: string, service: string): Logger {
  return pino({ level, base: { service }, redact: { paths: REDACT, censor: '[redacted]' } });
}

export type { Logger };
