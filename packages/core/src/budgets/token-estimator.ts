import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from '../schemas/message.js';

/** Tokens every chat message costs on top of its text (role, separators), per OpenAI's counting guide. */
const PER_MESSAGE = 4;

function encoderFor(model: string): ((text: string) => number) | null {
  if (/^(gpt-4o|gpt-4\.1|gpt-5|o1|o3|o4|chatgpt-4o)/.test(model)) return countO200k;
  if (/^(gpt-4|gpt-3\.5)/.test(model)) return countCl100k;
  return null;
}

/** One token per CJK character, one per three other characters: over-counts real tokenizers. */
function conservativeCount(text: string): number {
  let cjk = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x3400 && c <= 0x9fff) cjk++;
  }
  return cjk + Math.ceil((text.length - cjk) / 3);
}

/**
 * Counts already made, per counting function and text: a run's history is estimated on
 * every step, and all but its newest messages were counted before. Bounded; a forgotten
 * count is only counted again.
 */
const counted = new Map<(text: string) => number, Map<string, number>>();
const MAX_COUNTS = 5_000; // the histories of the runs in progress, with room; ~10 MB at most

function countOnce(count: (text: string) => number, text: string): number {
  let memo = counted.get(count);
  if (!memo) {
    memo = new Map();
    counted.set(count, memo);
  }
  let n = memo.get(text);
  if (n === undefined) {
    n = count(text);
    if (memo.size >= MAX_COUNTS) memo.clear();
    memo.set(text, n);
  }
  return n;
}

/**
 * Estimates the prompt tokens of a request before it is sent: exactly, with the model's
 * own tokenizer when the model is known; otherwise conservatively (one token per CJK
 * character, one per three other characters — both over-count real tokenizers).
 */
export function estimatePromptTokens(model: string, messages: ChatMessage[], tools: unknown[]): number {
  const count = encoderFor(model) ?? conservativeCount;
  let sum = countOnce(count, JSON.stringify(tools)) + PER_MESSAGE * messages.length;
  for (const m of messages) sum += countOnce(count, JSON.stringify(m));
  return sum;
}
