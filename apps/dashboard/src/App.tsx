import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { DashboardContext, type Dashboard } from './context';
import { createApi, sessionOf, type Session } from './lib/api';
import { applyBranding } from './lib/brand';
import { scheduleExpiring } from './lib/expiry';
import { subscribeLive } from './lib/live';
import { createLiveHub, LiveContext } from './lib/live-context';
import { parentChannel, parentOrigin, refreshTokenFrom } from './lib/parent';
import type { UrlParameters } from './lib/url-token';
import { chooseView } from './lib/views';
import { Shell } from './Shell';

type State = { phase: 'loading' } | { phase: 'ready'; session: Session } | { phase: 'ended' };

export function App({ parameters }: { parameters: UrlParameters }) {
  const token = useRef(parameters.token ?? '');
  const [state, setState] = useState<State>(parameters.token ? { phase: 'loading' } : { phase: 'ended' });
  const [expiresAt, setExpiresAt] = useState<string | null>(null);
  const ended = useCallback(() => setState({ phase: 'ended' }), []);
  const api = useMemo(() => createApi(() => token.current, ended), [ended]);
  const hub = useMemo(() => createLiveHub(), []);

  useEffect(() => {
    if (!parameters.token) return;
    sessionOf(api, parameters.token)
      .then((session) => {
        applyBranding(document, session.account);
        setExpiresAt(session.expires_at);
        setState({ phase: 'ready', session });
      })
      .catch(ended);
  }, [api, ended, parameters.token]);

  const session = state.phase === 'ready' ? state.session : null;
  const origin = useMemo(
    () => (session ? parentOrigin(session.parent_origin, window.location, document.referrer) : null),
    [session],
  );
  const parent = useMemo(
    () => parentChannel(window.parent !== window ? window.parent : null, origin),
    [origin],
  );

  // service:refresh_token: adopted only when it opens a session on the same account; else ignored.
  useEffect(() => {
    if (!session) return;
    const onMessage = (event: MessageEvent) => {
      const candidate = refreshTokenFrom(event, window.parent !== window ? window.parent : null, origin);
      if (!candidate) return;
      sessionOf(api, candidate)
        .then((next) => {
          if (next.account.id !== session.account.id) return;
          token.current = candidate;
          setExpiresAt(next.expires_at);
        })
        .catch(() => undefined);
    };
    window.addEventListener('message', onMessage);
    return () => window.removeEventListener('message', onMessage);
  }, [api, origin, session]);

  useEffect(() => {
    if (!session || !expiresAt) return;
    return scheduleExpiring(expiresAt, Date.now, () =>
      parent.post({ type: 'service:token_expiring', data: {} }),
    );
  }, [expiresAt, parent, session]);

  useEffect(() => {
    if (!session) return;
    return subscribeLive(
      session.account.id,
      () => token.current,
      (changes) => {
        for (const phone of changes.checklist_completed) {
          parent.post({ type: 'service:checklist_completed', data: { phone } });
        }
        hub.emit(changes);
      },
      ended,
    );
  }, [ended, hub, parent, session]);

  const dashboard = useMemo<Dashboard | null>(
    () => (session ? { api, session, parent } : null),
    [api, parent, session],
  );

  if (state.phase === 'loading') {
    return (
      <div className="screen" role="status" aria-label="Loading">
        <div className="spinner" />
      </div>
    );
  }
  if (state.phase === 'ended' || !dashboard) {
    return (
      <div className="screen" role="alert">
        <h1>This session has ended</h1>
        <p>Reload the page to continue.</p>
      </div>
    );
  }
  return (
    <DashboardContext.Provider value={dashboard}>
      <LiveContext.Provider value={hub}>
        <Shell view={chooseView(parameters.view, dashboard.session.view)} />
      </LiveContext.Provider>
    </DashboardContext.Provider>
  );
}
