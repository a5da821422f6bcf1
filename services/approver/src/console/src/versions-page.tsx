import { when } from './format.js';
import { ErrorNote, useLoad, useSession } from './ui.js';

/** The deploy view (operators; a tenant admin sees its own tenant's runs): each app version, its workers and API processes, and the runs still on it. */
export function VersionsPage() {
  const { api } = useSession();
  const list = useLoad(() => api.client.versions.list(), [api]);
  return (
    <>
      <h1>Versions</h1>
      <ErrorNote error={list.error} />
      {list.data ? (
        <>
          <p>
            New runs start on <strong id="current-version">{list.data.current}</strong>.
          </p>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Workers</th>
                  <th scope="col">API processes</th>
                  <th scope="col">Unfinished runs</th>
                  <th scope="col">Pending approvals</th>
                  <th scope="col">Upgrading to</th>
                  <th scope="col">Last seen</th>
                </tr>
              </thead>
              <tbody>
                {list.data.versions.map((v) => (
                  <tr key={v.version}>
                    <td>
                      <code>{v.version}</code>
                      {v.current ? ' · current' : ''}
                      {v.promoted ? ' · promoted' : ''}
                    </td>
                    <td class="num">{v.workers}</td>
                    <td class="num">{v.apis}</td>
                    <td>
                      {Object.entries(v.runs)
                        .map(([status, n]) => `${status} ${n}`)
                        .join(', ') || '—'}
                    </td>
                    <td class="num">{v.pendingApprovals}</td>
                    <td>{v.upgradingTo ?? '—'}</td>
                    <td>{when(v.lastSeen)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="muted">Promote and upgrade with the CLI or the API (POST /v1/versions/:version/promote, …/upgrade).</p>
        </>
      ) : null}
    </>
  );
}
