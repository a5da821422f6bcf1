import type { DynamicToolUIPart, ToolUIPart } from 'ai';
import { useState } from 'react';
import type { ReinDecision } from './api';

export interface Answer {
  id: string;
  approved: boolean;
  reason?: string;
}

const STATES: Record<string, string> = {
  'input-streaming': 'preparing',
  'input-available': 'running',
  'approval-requested': 'waiting for approval',
  'approval-responded': 'decision sent',
  'output-available': 'done',
  'output-error': 'failed',
  'output-denied': 'rejected',
};

/** Pretty JSON; a tool's observation arrives as text (JSON, or a preview cut short), shown as it is when it does not parse. */
function json(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value, null, 2);
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

/** One tool call: its arguments, then its result, its error, its rejection — or the approval card. */
export function ToolCall({
  name,
  part,
  refusal,
  onDecide,
}: {
  name: string;
  part: ToolUIPart | DynamicToolUIPart;
  refusal: ReinDecision | undefined;
  onDecide: (answer: Answer) => void;
}) {
  return (
    <section className={`tool ${part.state}`} aria-label={`Tool call ${name}`}>
      <header>
        <code>{name}</code> <span className="state">{STATES[part.state] ?? part.state}</span>
      </header>
      {part.input !== undefined && <Block label="Arguments" value={part.input} />}
      {part.state === 'output-available' && <Block label="Result" value={part.output} />}
      {part.state === 'output-error' && <p className="error">{part.errorText}</p>}
      {part.state === 'output-denied' && <p className="denied">Rejected{part.approval.reason ? `: ${part.approval.reason}` : ''}</p>}
      {part.state === 'approval-requested' && <ApprovalCard id={part.approval.id} name={name} refusal={refusal} onDecide={onDecide} />}
    </section>
  );
}

function Block({ label, value }: { label: string; value: unknown }) {
  return (
    <div className="block">
      <span className="label">{label}</span>
      <pre>{json(value)}</pre>
    </div>
  );
}

function ApprovalCard({
  id,
  name,
  refusal,
  onDecide,
}: {
  id: string;
  name: string;
  refusal: ReinDecision | undefined;
  onDecide: (answer: Answer) => void;
}) {
  const [reason, setReason] = useState('');
  const why = reason.trim() ? { reason: reason.trim() } : {};
  return (
    <fieldset className="approval">
      <legend>Approve {name}?</legend>
      <p>This call changes data; it runs only once you (or an approver) approve it, with exactly these arguments.</p>
      {refusal && (
        <p className="refused" role="status">
          Not applied: {refusal.message}. It stays pending for someone who may decide it.
        </p>
      )}
      <label htmlFor={`reason-${id}`}>Reason (optional)</label>
      <input id={`reason-${id}`} value={reason} onChange={(e) => setReason(e.target.value)} />
      <div className="actions">
        <button type="button" className="approve" onClick={() => onDecide({ id, approved: true, ...why })}>
          Approve
        </button>
        <button type="button" className="reject" onClick={() => onDecide({ id, approved: false, ...why })}>
          Reject
        </button>
      </div>
    </fieldset>
  );
}
