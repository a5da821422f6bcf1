import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { useMemo, useState } from 'react';
import { AGENT, API_URL, type ChatMessage } from './api';
import { MessageView } from './message-view';

const SUGGESTIONS = ['客户张三投诉订单 2024001 一直没发货，帮他处理一下', '查订单 A12345 状态，按政策说能否退'];

/**
 * One conversation: the chat id is the Rein session, so the history lives on the server
 * and each request carries only the new message or the approval answers.
 */
export function Chat({ apiKey, chatId }: { apiKey: string; chatId: string }) {
  const transport = useMemo(
    () => new DefaultChatTransport<ChatMessage>({ api: `${API_URL}/v1/chat/${AGENT}`, headers: { authorization: `Bearer ${apiKey}` } }),
    [apiKey],
  );
  const { messages, sendMessage, addToolApprovalResponse, status, error, stop } = useChat<ChatMessage>({
    id: chatId,
    transport,
    // Answered approvals go back by themselves once every pending one in the message is answered.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const busy = status === 'submitted' || status === 'streaming';

  const send = (text: string) => {
    if (!text.trim() || busy) return;
    void sendMessage({ text: text.trim() });
    setInput('');
  };

  return (
    <main className="chat">
      <ol className="messages" aria-label="Conversation">
        {messages.map((m) => (
          <MessageView key={m.id} message={m} onDecide={(answer) => void addToolApprovalResponse(answer)} />
        ))}
      </ol>
      {messages.length === 0 && (
        <div className="suggestions">
          <p>Try:</p>
          {SUGGESTIONS.map((s) => (
            <button key={s} type="button" onClick={() => send(s)}>
              {s}
            </button>
          ))}
        </div>
      )}
      {busy && (
        <p className="working" aria-live="polite">
          Working…{' '}
          <button type="button" onClick={() => void stop()}>
            Stop
          </button>
        </p>
      )}
      {error && (
        <p role="alert" className="error">
          {error.message}
        </p>
      )}
      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          send(input);
        }}
      >
        <label htmlFor="message" className="visually-hidden">
          Message
        </label>
        <textarea
          id="message"
          rows={2}
          value={input}
          placeholder="Ask about an order…"
          onChange={(e) => setInput(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault();
              send(input);
            }
          }}
        />
        <button type="submit" disabled={busy || !input.trim()}>
          Send
        </button>
      </form>
    </main>
  );
}
