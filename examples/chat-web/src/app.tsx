import { useState } from 'react';
import { type Me, whoAmI } from './api';
import { Chat } from './chat';

const STORED_KEY = 'rein-chat-key';

/** Local development only: the key typed here is kept for this tab and sent from the browser. */
export function App() {
  const [key, setKey] = useState(() => sessionStorage.getItem(STORED_KEY) ?? '');
  const [me, setMe] = useState<Me | null>(null);
  const [chatId, setChatId] = useState(() => crypto.randomUUID());

  const signOut = () => {
    sessionStorage.removeItem(STORED_KEY);
    setKey('');
    setMe(null);
  };

  if (!key || !me)
    return (
      <KeyForm
        initial={key}
        onSignedIn={(k, who) => {
          sessionStorage.setItem(STORED_KEY, k);
          setKey(k);
          setMe(who);
        }}
      />
    );
  return (
    <div className="page">
      <header className="bar">
        <h1>Order assistant</h1>
        <p id="who">
          {me.userId} ({me.roles.join(', ')}) · tenant {me.tenantId}
        </p>
        <button type="button" onClick={() => setChatId(crypto.randomUUID())}>
          New chat
        </button>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      {/* A new chat or key is a new useChat instance (its transport holds the key). */}
      <Chat key={`${key}/${chatId}`} apiKey={key} chatId={chatId} />
    </div>
  );
}

function KeyForm({ initial, onSignedIn }: { initial: string; onSignedIn: (key: string, me: Me) => void }) {
  const [key, setKey] = useState(initial);
  const [problem, setProblem] = useState('');
  const [busy, setBusy] = useState(false);

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setProblem('');
    try {
      const me = await whoAmI(key.trim());
      if (me) onSignedIn(key.trim(), me);
      else setProblem('That key is not valid.');
    } catch (err) {
      setProblem(`Could not reach the API: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="sign-in">
      <h1>Order assistant</h1>
      <p>
        Local development: enter a Rein API key (<code>npm start</code> prints the demo keys). A production page gets its user's token from
        your sign-in instead and never holds a key.
      </p>
      <form onSubmit={submit}>
        <label htmlFor="key">API key</label>
        <input id="key" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      {problem && <p role="alert">{problem}</p>}
    </main>
  );
}
