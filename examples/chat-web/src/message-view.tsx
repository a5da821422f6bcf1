import { getToolName, isToolUIPart } from 'ai';
import type { ChatMessage, ReinDecision } from './api';
import { type Answer, ToolCall } from './tool-call';

/** A user message, or a run's assistant message: its thought, tool calls and answer in order. */
export function MessageView({ message, onDecide }: { message: ChatMessage; onDecide: (answer: Answer) => void }) {
  // A decision the caller may not make comes back as a data part; its tool card says so.
  const refused = new Map<string, ReinDecision>();
  for (const p of message.parts) if (p.type === 'data-rein-decision') refused.set(p.data.approvalId, p.data);
  const { runId, status, usage } = message.metadata ?? {};

  return (
    <li className={`message ${message.role}`} aria-label={message.role === 'user' ? 'You' : 'Assistant'}>
      {message.parts.map((part, i) => {
        const key = `${message.id}-${i}`;
        if (part.type === 'text')
          return (
            <p key={key} className="text">
              {part.text}
            </p>
          );
        if (part.type === 'reasoning')
          return (
            <p key={key} className="thought">
              <span className="label">Thought</span> {part.text}
            </p>
          );
        if (isToolUIPart(part)) {
          const refusal = part.approval ? refused.get(part.approval.id) : undefined;
          return <ToolCall key={key} name={getToolName(part)} part={part} refusal={refusal} onDecide={onDecide} />;
        }
        return null;
      })}
      {message.role === 'assistant' && runId && (
        <p className="meta">
          run {runId} · {status}
          {usage?.totalTokens !== undefined ? ` · ${usage.totalTokens} tokens` : ''}
        </p>
      )}
    </li>
  );
}
