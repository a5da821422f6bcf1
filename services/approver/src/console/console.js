// The approver console: plain DOM, no build step. Everything model- or user-written is
// inserted as text (never as HTML). Live updates come from the tenant's approval feed.

const state = {
  key: sessionStorage.getItem('rein.approverKey'),
  pending: [],
  pendingCursor: null,
  recent: [],
  openId: null,
  feed: null,
  lastEventId: '0',
};
// Pending approvals are paged from their own index, so any number of decided ones never hides them.
const PAGE = 100;
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ''));
  return node;
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${state.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(json.error?.message ?? res.statusText), { status: res.status, code: json.error?.code });
  return json;
}

const duration = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
};

function renderPending() {
  const pending = state.pending;
  $('pending-count').textContent = `(${pending.length}${state.pendingCursor ? '+' : ''})`;
  $('pending-more').hidden = !state.pendingCursor;
  $('pending-empty').hidden = pending.length > 0;
  $('pending').replaceChildren(
    ...pending.map((a) =>
      el(
        'tr',
        { 'data-approval-id': a.id },
        el('td', {}, el('span', { class: `risk risk-${a.risk}` }, a.risk)),
        el('td', {}, a.summary, el('div', { class: 'muted' }, a.toolName)),
        el('td', {}, a.requestedBy),
        el('td', { 'data-since': a.createdAt }, duration(Date.now() - Date.parse(a.createdAt))),
        el('td', { 'data-until': a.expiresAt }, duration(Date.parse(a.expiresAt) - Date.now())),
        el('td', {}, el('button', { type: 'button', onclick: () => openApproval(a.id), 'aria-label': `Open: ${a.summary}` }, 'Open')),
      ),
    ),
  );
  const decided = state.recent.filter((a) => a.status !== 'pending').slice(0, 20);
  $('recent').replaceChildren(
    ...decided.map((a) =>
      el(
        'li',
        { 'data-approval-id': a.id },
        `${a.status} — ${a.summary}`,
        el(
          'span',
          { class: 'muted' },
          ` ${a.decidedBy ? `by ${a.decidedBy}` : ''} ${a.decidedAt ?? ''} ${a.comment ? `· “${a.comment}”` : ''}`,
        ),
      ),
    ),
  );
}

const pendingPage = (cursor) =>
  api('GET', `/v1/approvals?status=pending&limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);

/** Pages of pending approvals until at least `atLeast` are loaded (what was on screen) or none are left. */
async function loadPending(atLeast) {
  const pending = [];
  let cursor = null;
  do {
    const page = await pendingPage(cursor);
    pending.push(...page.approvals);
    cursor = page.nextCursor ?? null;
  } while (cursor && pending.length < atLeast);
  return { pending, cursor };
}

async function loadMorePending() {
  if (!state.pendingCursor) return;
  const page = await pendingPage(state.pendingCursor);
  const seen = new Set(state.pending.map((a) => a.id));
  state.pending.push(...page.approvals.filter((a) => !seen.has(a.id)));
  state.pendingCursor = page.nextCursor ?? null;
  renderPending();
}

async function refresh() {
  const [{ pending, cursor }, recent, uncertain] = await Promise.all([
    loadPending(Math.max(PAGE, state.pending.length)),
    api('GET', '/v1/approvals?limit=40'),
    api('GET', '/v1/effects/uncertain'),
  ]);
  state.pending = pending;
  state.pendingCursor = cursor;
  state.recent = recent.approvals;
  renderPending();
  $('uncertain-section').hidden = uncertain.effects.length === 0;
  $('uncertain').replaceChildren(
    ...uncertain.effects.map((e) =>
      el('li', {}, `${e.tool} — run ${e.runId}, step ${e.step + 1}, call ${e.toolCallId}`, el('span', { class: 'muted' }, ` ${e.at}`)),
    ),
  );
  if (state.openId) await openApproval(state.openId, { keepMessage: true });
}

/** The rule the approver service enforces (core's decision rights), in words. */
function whoMayDecide({ deciders, requiredRole }) {
  const others = `${/^[aeiou]/i.test(deciders.role) ? 'an' : 'a'} ${deciders.role} or higher, other than the requester`;
  return deciders.requester === 'as_proposed'
    ? `${others}; the requester only as proposed (no edits) and only with the ${requiredRole} role`
    : `${others} (four eyes)`;
}

async function openApproval(id, { keepMessage = false } = {}) {
  state.openId = id;
  const [approval, trace] = await Promise.all([
    api('GET', `/v1/approvals/${encodeURIComponent(id)}`),
    api('GET', `/v1/approvals/${encodeURIComponent(id)}/trace`),
  ]);
  $('detail').hidden = false;
  $('detail-title').textContent = `Approval: ${approval.summary}`;
  const facts = [
    ['Status', approval.status],
    ['Risk', approval.risk],
    ['Who may decide', whoMayDecide(approval)],
    ['Tool', approval.toolName],
    ['Requested by', approval.requestedBy],
    ['Run', `${approval.runId} (step ${approval.step + 1})`],
    ['Expires', `${approval.expiresAt} (${duration(Date.parse(approval.expiresAt) - Date.now())} left)`],
    ...(approval.decidedBy ? [['Decided by', `${approval.decidedBy} at ${approval.decidedAt}`]] : []),
  ];
  $('detail-facts').replaceChildren(...facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  const isPlan = approval.kind === 'plan';
  $('detail-args-title').textContent = isPlan ? 'The plan (edit a step’s arguments to approve it with edits)' : 'Exact arguments';
  $('detail-args').hidden = isPlan;
  $('detail-plan').hidden = !isPlan;
  $('detail-args').textContent = JSON.stringify(approval.approvedArguments ?? approval.arguments, null, 2);
  // A plan is approved once, as a whole: each step shows its tool, risk and arguments, editable while pending.
  const steps = isPlan ? (approval.approvedArguments ?? approval.arguments).steps : [];
  $('detail-plan').replaceChildren(
    ...steps.map((s) => {
      const args = JSON.stringify(s.args, null, 2);
      return el(
        'li',
        {},
        el('strong', {}, `${s.step}. ${s.action}`),
        ` (${s.risk} risk) — ${s.desc}`,
        el(
          'textarea',
          {
            'data-step': String(s.step),
            'data-original': args,
            rows: String(args.split('\n').length),
            'aria-label': `Arguments of step ${s.step}`,
          },
          args,
        ),
      );
    }),
  );
  for (const area of $('detail-plan').querySelectorAll('textarea')) area.disabled = approval.status !== 'pending';
  $('detail-trace').replaceChildren(
    el('li', {}, el('strong', {}, 'Input: '), trace.input),
    ...trace.steps.map((s) =>
      el(
        'li',
        {},
        s.thought ? el('div', {}, el('strong', {}, 'Thought: '), s.thought) : '',
        ...s.toolCalls.map((c) =>
          el(
            'div',
            {},
            el('strong', {}, `${c.name}`),
            ` ${JSON.stringify(c.arguments)} → ${c.outcome}: `,
            el('span', { class: 'muted' }, c.observation.slice(0, 400)),
          ),
        ),
      ),
    ),
  );
  const pending = approval.status === 'pending';
  $('approve').disabled = !pending;
  $('reject').disabled = !pending;
  if (!keepMessage) $('decide-result').textContent = '';
}

/** The plan steps whose arguments the approver changed, as `{ arguments: { "<step>": args } }` (re-policed by the server). */
function planEdits() {
  const edits = {};
  for (const area of $('detail-plan').hidden ? [] : $('detail-plan').querySelectorAll('textarea')) {
    if (area.value.trim() === area.dataset.original.trim()) continue;
    try {
      edits[area.dataset.step] = JSON.parse(area.value);
    } catch {
      throw new Error(`the arguments of step ${area.dataset.step} are not valid JSON`);
    }
  }
  return Object.keys(edits).length ? { arguments: edits } : {};
}

async function decide(kind) {
  const comment = $('comment').value.trim();
  if (kind === 'reject' && !comment) {
    $('decide-result').textContent = 'A reason is required to reject.';
    $('comment').focus();
    return;
  }
  try {
    const body = kind === 'approve' ? { ...(comment ? { comment } : {}), ...planEdits() } : { reason: comment };
    const decided = await api('POST', `/v1/approvals/${encodeURIComponent(state.openId)}/${kind}`, body);
    $('decide-result').textContent = `${decided.status === 'approved' ? 'Approved' : 'Rejected'}. The run resumes.`;
    $('comment').value = '';
  } catch (err) {
    $('decide-result').textContent = `Not decided: ${err.message}`;
  }
  await refresh();
}

/** Follows the tenant's approval feed (fetch, so the key travels in a header) and reconnects. */
async function follow() {
  const controller = new AbortController();
  state.feed = controller;
  while (!controller.signal.aborted) {
    try {
      const res = await fetch('/v1/approvals/events', {
        headers: { authorization: `Bearer ${state.key}`, 'last-event-id': state.lastEventId },
        signal: controller.signal,
      });
      $('live').textContent = '· live';
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        const frames = buffer.split('\n\n');
        buffer = frames.pop();
        let changed = false;
        for (const frame of frames) {
          const id = frame.split('\n').find((l) => l.startsWith('id: '));
          if (id) {
            state.lastEventId = id.slice(4);
            changed = true;
          }
        }
        if (changed) await refresh();
      }
    } catch {
      if (controller.signal.aborted) return;
    }
    $('live').textContent = '· reconnecting…';
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function signIn(key) {
  state.key = key;
  try {
    const me = await api('GET', '/v1/me');
    sessionStorage.setItem('rein.approverKey', key);
    $('who').textContent = `Signed in as ${me.userId} (${me.roles.join(', ')}) · tenant ${me.tenantId}`;
    $('sign-in').hidden = true;
    $('workspace').hidden = false;
    $('sign-out').hidden = false;
    await refresh();
    follow();
  } catch (err) {
    state.key = null;
    sessionStorage.removeItem('rein.approverKey');
    $('sign-in-error').textContent = err.status === 401 ? 'That key is not valid.' : `Could not sign in: ${err.message}`;
  }
}

$('sign-in-form').addEventListener('submit', (e) => {
  e.preventDefault();
  $('sign-in-error').textContent = '';
  signIn($('api-key').value.trim());
});
$('decide-form').addEventListener('submit', (e) => {
  e.preventDefault();
  decide(e.submitter?.value === 'reject' ? 'reject' : 'approve');
});
$('pending-more').addEventListener('click', () => loadMorePending());
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem('rein.approverKey');
  state.feed?.abort();
  location.reload();
});
// Ages and time left tick without a round trip.
setInterval(() => {
  for (const td of document.querySelectorAll('[data-since]')) td.textContent = duration(Date.now() - Date.parse(td.dataset.since));
  for (const td of document.querySelectorAll('[data-until]')) td.textContent = duration(Date.parse(td.dataset.until) - Date.now());
}, 1000);

if (state.key) signIn(state.key);
