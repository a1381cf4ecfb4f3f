// The dashboard shell: who is signed in, the navigation (Settings → API Keys, Usage, Agents, MCP servers, Events)
// and the page the location hash names. Hash routes keep every page on the one index.html
// the admin listener serves.
import { useEffect, useState } from 'preact/hooks';
import { currentSession, signOut, whenSignedOut } from './api.js';
import { ErrorState, Loading } from './components/states.js';
import { AgentsPage } from './pages/agents-page.js';
import { EventsPage } from './pages/events-page.js';
import { McpPage } from './pages/mcp-page.js';
import { KeysPage } from './pages/keys-page.js';
import { SignIn } from './pages/sign-in.js';
import { UsagePage } from './pages/usage-page.js';
import type { Session } from './types.js';

const PAGES = {
  keys: { title: 'API Keys', section: 'Settings' },
  usage: { title: 'Usage', section: 'Insights' },
  agents: { title: 'Agents', section: 'Insights' },
  mcp: { title: 'MCP servers', section: 'Insights' },
  events: { title: 'Events', section: 'Insights' },
} as const;
type PageName = keyof typeof PAGES;

function pageFromHash(): PageName {
  // "#/usage?key_id=…": the page's name, then what it opens filtered on (the page reads it).
  const name = location.hash.replace(/^#\/?/, '').split('?')[0]!;
  return name in PAGES ? (name as PageName) : 'keys';
}

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [failure, setFailure] = useState<Error | undefined>(undefined);
  const [page, setPage] = useState<PageName>(pageFromHash());

  const load = () => {
    setFailure(undefined);
    currentSession().then((s) => setSession(s ?? null), setFailure);
  };
  useEffect(() => {
    load();
    whenSignedOut(() => setSession(null));
    const onHash = () => setPage(pageFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    document.title = session ? `${PAGES[page].title} · agent-gateway` : 'Sign in · agent-gateway';
  }, [page, session]);

  if (failure) return <main class="centered"><ErrorState error={failure} retry={load} /></main>;
  if (session === undefined) return <main class="centered"><Loading what="the dashboard" /></main>;
  if (session === null) return <SignIn onSignedIn={setSession} />;

  const canWrite = session.role === 'admin';
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">agent-gateway</span>
        <span class="who">
          Signed in as <strong>{session.name}</strong> <span class={`role role-${session.role}`}>{session.role}</span>
        </span>
        <button type="button" class="button button-quiet" onClick={() => signOut().finally(() => setSession(null))}>
          Sign out
        </button>
      </header>
      <nav class="sidebar" aria-label="Dashboard">
        {(['Settings', 'Insights'] as const).map((section) => (
          <div class="nav-section" key={section}>
            <p class="nav-heading">{section}</p>
            <ul>
              {(Object.keys(PAGES) as PageName[])
                .filter((name) => PAGES[name].section === section)
                .map((name) => (
                  <li key={name}>
                    <a href={`#/${name}`} aria-current={page === name ? 'page' : undefined}>
                      {PAGES[name].title}
                    </a>
                  </li>
                ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        {page === 'keys' ? (
          <KeysPage canWrite={canWrite} />
        ) : page === 'usage' ? (
          <UsagePage />
        ) : page === 'events' ? (
          <EventsPage canWrite={canWrite} />
        ) : page === 'mcp' ? (
          <McpPage />
        ) : (
          <AgentsPage />
        )}
      </main>
    </div>
  );
}
