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

/**
 * Estimates the prompt tokens of a request before it is sent: exactly, with the model's
 * own tokenizer when the model is known; otherwise conservatively (one token per CJK
 * character, one per three other characters — both over-count real tokenizers).
 */
export function estimatePromptTokens(model: string, messages: ChatMessage[], tools: unknown[]): number {
  const texts = [...messages.map((m) => JSON.stringify(m)), JSON.stringify(tools)];
  const encode = encoderFor(model);
  const count =
    encode ??
    ((t: string) => {
      const cjk = t.match(/[\u3400-\u9fff]/g)?.length ?? 0;
      return cjk + Math.ceil((t.length - cjk) / 3);
    });
  return texts.reduce((sum, t) => sum + count(t), 0) + PER_MESSAGE * messages.length;
}
