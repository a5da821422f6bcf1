/**
 * How long a step's text is held back before it is taken for an answer: what a model
 * writes before it calls a tool is the step's thought (shown as reasoning), and a model
 * writes its tool calls after its text, so a short text is held until the step shows
 * which it was; a longer one streams on as the answer.
 */
export const THOUGHT_HOLD_CHARS = 160;

export interface TextPiece {
  kind: 'text' | 'reasoning';
  delta: string;
}

/**
 * Sorts one step's streamed text into thought (reasoning) and answer (text), in order.
 * Both doors use it, so a chat UI and an AG-UI client see the same split.
 */
export function createStepText(holdChars = THOUGHT_HOLD_CHARS) {
  let mode: 'held' | TextPiece['kind'] = 'held';
  let held = '';
  let streamed = false;
  const piece = (kind: TextPiece['kind'], delta: string): TextPiece[] => {
    if (!delta) return [];
    streamed = true;
    return [{ kind, delta }];
  };
  const release = (kind: TextPiece['kind']): TextPiece[] => {
    mode = kind;
    const out = piece(kind, held);
    held = '';
    return out;
  };
  return {
    text(delta: string): TextPiece[] {
      if (mode !== 'held') return piece(mode, delta);
      held += delta;
      return held.length > holdChars ? release('text') : [];
    },
    /** The step started a tool call: what it held was its thought, and so is what it writes next. */
    toolCall(): TextPiece[] {
      return mode === 'held' ? release('reasoning') : [];
    },
    /**
     * The step ended: what is still held goes out as thought or answer. `fallback`: the
     * step's thought as committed, sent when nothing streamed (a model that does not stream).
     */
    end(calledTools: boolean, fallback?: string | null): TextPiece[] {
      const kind = calledTools ? 'reasoning' : 'text';
      if (mode === 'held' && held) return release(kind);
      return streamed || !fallback ? [] : piece(kind, fallback);
    },
  };
}

/**
 * The steps whose text a client already has. A step resumed after a park (an approval
 * decided, a child ended) commits its thought again and streams nothing: without this the
 * continuation would say the thought a second time.
 */
export function createSpokenSteps() {
  const spoken = new Set<number>();
  return {
    /** The committed thought to fall back on as step `index` closes: none when it has been said. */
    fallback(index: number | undefined, thought: string | null | undefined): string | null {
      if (index === undefined) return thought ?? null;
      if (spoken.has(index)) return null;
      spoken.add(index);
      return thought ?? null;
    },
  };
}
