import { readFileSync } from 'node:fs';
import { type InputRules, inputRulesSchema, type PiiRules, piiRulesSchema } from '@rein/core';

const read = (name: string) => JSON.parse(readFileSync(new URL(name, import.meta.url), 'utf8'));

/** The shop's input filter: core's injection rules plus what is out of an order assistant's scope. */
export const inputRules: InputRules = inputRulesSchema.parse(read('./input-rules.json'));

/** PII rules that keep the shop's own ids (order, ticket, refund numbers) readable in logs. */
export const piiRules: PiiRules = piiRulesSchema.parse(read('./pii-rules.json'));
