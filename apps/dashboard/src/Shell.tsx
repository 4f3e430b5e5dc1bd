import { useState } from 'react';
import { useDashboard } from './context';
import type { View } from './lib/views';
import { Conversations } from './views/Conversations';
import { Leads } from './views/Leads';
import { Sequences } from './views/Sequences';
import { Settings } from './views/Settings';

const tabs = [
  { view: 'conversations', label: 'Conversations' },
  { view: 'leads', label: 'Leads' },
  { view: 'sequences', label: 'Sequences' },
  { view: 'settings', label: 'Settings' },
] as const;

type TabView = (typeof tabs)[number]['view'];

function Content({ view }: { view: Exclude<View, 'full'> }) {
  switch (view) {
    case 'conversations':
      return <Conversations />;
    case 'leads':
      return <Leads />;
    case 'settings':
      return <Settings />;
    case 'sequences':
      return <Sequences />;
    default: {
      const never: never = view;
      return never;
    }
  }
}

/** The account's header, then one view, or the tabs of the full dashboard. */
export function Shell({ view }: { view: View }) {
  const { session } = useDashboard();
  const [tab, setTab] = useState<TabView>('conversations');
  const shown = view === 'full' ? tab : view;
  return (
    <div className="app">
      <header className="brand">
        {session.account.logo_url && (
          <img className="logo" src={session.account.logo_url} alt="" referrerPolicy="no-referrer" />
        )}
        <span className="company">{session.account.company_name}</span>
        {view === 'full' && (
          <nav className="tabs" role="tablist">
            {tabs.map((entry) => (
              <button
                key={entry.view}
                role="tab"
                aria-selected={tab === entry.view}
                className={tab === entry.view ? 'tab active' : 'tab'}
                onClick={() => setTab(entry.view)}
              >
                {entry.label}
              </button>
            ))}
          </nav>
        )}
        {session.user.name && <span className="user">{session.user.name}</span>}
      </header>
      <main className="content">
        <Content view={shown} />
      </main>
    </div>
  );
}
