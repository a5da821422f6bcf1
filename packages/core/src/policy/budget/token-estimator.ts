import type { ChatMessage } from '@rein/contract';
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';

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

type Count = (text: string) => number;

/**
 * Counts already made. A step estimates its history twice (for the context policy, then
 * for the whole prompt) and the same tool list every time: both are remembered by object,
 * per counting function. A tokenizer's counts are also remembered by text (bounded),
 * since a run's history comes back as new objects on every step and tokenizing is dear;
 * the conservative count is a single pass, cheaper than looking a long text up.
 */
const byObject = new Map<Count, WeakMap<object, number>>();
const byText = new Map<Count, Map<string, number>>();
const MAX_TEXTS = 5_000; // the histories of the runs in progress, with room

/** The memo of `count` in `memos`, made on first use. */
function memoOf<M>(memos: Map<Count, M>, count: Count, make: () => M): M {
  let memo = memos.get(count);
  if (!memo) {
    memo = make();
    memos.set(count, memo);
  }
  return memo;
}

function countText(count: Count, text: string): number {
  if (count === conservativeCount) return count(text);
  const memo = memoOf(byText, count, () => new Map<string, number>());
  let n = memo.get(text);
  if (n === undefined) {
    n = count(text);
    if (memo.size >= MAX_TEXTS) memo.clear();
    memo.set(text, n);
  }
  return n;
}

function countJson(count: Count, value: object): number {
  const memo = memoOf(byObject, count, () => new WeakMap<object, number>());
  let n = memo.get(value);
  if (n === undefined) {
    n = countText(count, JSON.stringify(value));
    memo.set(value, n);
  }
  return n;
}

/**
 * Estimates the prompt tokens of a request before it is sent: exactly, with the model's
 * own tokenizer when the model is known; otherwise conservatively (one token per CJK
 * character, one per three other characters — both over-count real tokenizers).
 * Messages and tool lists are not changed after they are built, so counts are kept by object.
 */
export function estimatePromptTokens(model: string, messages: ChatMessage[], tools: unknown[]): number {
  const count = encoderFor(model) ?? conservativeCount;
  let sum = countJson(count, tools) + PER_MESSAGE * messages.length;
  for (const m of messages) sum += countJson(count, m);
  return sum;
}

/**
 * Counts a model's reply as Rein sees it (its text, and each tool call's name and
 * arguments), conservatively: one linear pass whatever the model, so a reply of any size
 * is cheap to count, and the count is at or above what real tokenizers say.
 */
export function estimateCompletionTokens(content: string | null, toolCalls: ReadonlyArray<{ name: string; arguments: string }>): number {
  let sum = conservativeCount(content ?? '');
  for (const call of toolCalls) sum += conservativeCount(call.name) + conservativeCount(call.arguments);
  return sum;
}
