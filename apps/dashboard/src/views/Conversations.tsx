import { useCallback, useEffect, useRef, useState } from 'react';
import { useDashboard } from '../context';
import { dataOf, type Schemas } from '../lib/api';
import { formatPhone, formatTime } from '../lib/format';
import { useLiveChanges } from '../lib/live-context';

type Conversation = Schemas['Conversation'];
type Message = Schemas['Message'];

const PAGE = 100;

/** Outbound delivery as the carrier reports it, updated live. */
export const deliveryLabel: Record<string, string> = {
  queued: 'Sending',
  sent: 'Sent',
  delivered: 'Delivered',
  undelivered: 'Not delivered',
  failed: 'Failed',
};

/** Why the gateway holds a queued message, in words (the API's `MessageHold` reasons). */
export const holdLabel: Record<NonNullable<Message['held']>['reason'], string> = {
  registration_pending: 'waiting for the carrier registration',
  quiet_hours: "outside the lead's sending hours",
  state_hours: "outside the hours the lead's state allows",
  state_sunday: "Sunday, restricted in the lead's state",
  state_holiday: "a holiday restricted in the lead's state",
  brand_daily_cap: 'daily carrier limit reached',
};

export function ConversationList({
  conversations,
  selected,
  onSelect,
}: {
  conversations: Conversation[];
  selected: string | null;
  onSelect: (phone: string) => void;
}) {
  if (conversations.length === 0) return <p className="empty">No conversations.</p>;
  return (
    <ul className="conversation-list" aria-label="Conversations">
      {conversations.map((conversation) => (
        <li key={conversation.phone}>
          <button
            className={conversation.phone === selected ? 'conversation selected' : 'conversation'}
            onClick={() => onSelect(conversation.phone)}
            data-phone={conversation.phone}
          >
            <span className="who">
              {conversation.name ?? formatPhone(conversation.phone)}
              {conversation.needs_handoff && <span className="badge handoff">Needs attention</span>}
              {conversation.opted_out && <span className="badge muted">Opted out</span>}
            </span>
            <span className="when">{formatTime(conversation.last_message_at)}</span>
            <span className="preview">{conversation.preview}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Who sent an outbound message, as the thread names it beside its time. */
function senderOf(message: Message): string {
  switch (message.source) {
    case 'manual':
      return message.sender_name ?? 'Team';
    case 'ai':
      return 'AI';
    case 'system':
      return 'Automatic reply';
    default:
      return 'Sequence';
  }
}

/** Oldest first, so the newest message sits at the bottom, next to the composer. */
export function MessageThread({ messages }: { messages: Message[] }) {
  const ordered = [...messages].sort((a, b) => a.sent_at.localeCompare(b.sent_at));
  return (
    <ol className="thread" aria-label="Messages">
      {ordered.map((message) => (
        <li key={message.id} className={`message ${message.direction}`} data-direction={message.direction}>
          {message.content_expired ? (
            // The account's retention removed the text; the message's time and status stay.
            <div className="bubble expired" data-expired>
              Removed after the retention period
            </div>
          ) : (
            <div className="bubble">{message.body}</div>
          )}
          <div className="meta">
            {message.direction === 'outbound' && `${senderOf(message)} · `}
            {formatTime(message.sent_at)}
            {message.direction === 'outbound' &&
              // A held message is still queued: saying why it waits tells more than "Sending".
              (message.held ? (
                <span className="delivery held" data-status={message.status} data-held={message.held.reason}>
                  {' · '}
                  Held: {holdLabel[message.held.reason]}
                  {message.held.until && ` until ${formatTime(message.held.until)}`}
                </span>
              ) : (
                <span className={`delivery ${message.status}`} data-status={message.status}>
                  {' · '}
                  {deliveryLabel[message.status] ?? message.status}
                </span>
              ))}
          </div>
        </li>
      ))}
    </ol>
  );
}

function Thread({ conversation, onChanged }: { conversation: Conversation; onChanged: () => void }) {
  const { api, session, parent } = useDashboard();
  const [messages, setMessages] = useState<Message[]>([]);
  const [draft, setDraft] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const end = useRef<HTMLDivElement>(null);
  const { phone } = conversation;

  const load = useCallback(async () => {
    const page = dataOf(
      await api.GET('/accounts/{id}/conversations/{phone}/messages', {
        params: { path: { id: session.account.id, phone }, query: { limit: PAGE } },
      }),
    );
    setMessages(page.messages);
  }, [api, phone, session.account.id]);

  useEffect(() => {
    setMessages([]);
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);
  // Braces: newer browsers return a promise from scrollIntoView, and an effect may return only a cleanup.
  useEffect(() => {
    end.current?.scrollIntoView?.({ block: 'end' });
  }, [messages]);
  useLiveChanges((changes) => {
    if (changes.resync || changes.conversations.includes(phone)) void load().catch(() => undefined);
  });

  const send = async () => {
    if (!draft.trim()) return;
    setBusy(true);
    setError(null);
    try {
      await api.POST('/accounts/{id}/conversations/{phone}/messages', {
        params: { path: { id: session.account.id, phone } },
        body: { body: draft },
      });
      parent.post({ type: 'service:message_sent', data: { phone } });
      setDraft('');
      await load();
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const resume = async () => {
    setError(null);
    try {
      await api.POST('/accounts/{id}/conversations/{phone}/resume-ai', {
        params: { path: { id: session.account.id, phone } },
      });
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <section className="thread-pane" aria-label={`Conversation with ${conversation.name ?? phone}`}>
      <header className="thread-header">
        <div>
          <strong>{conversation.name ?? formatPhone(phone)}</strong>
          {conversation.name && <span className="sub">{formatPhone(phone)}</span>}
          {conversation.lead_status && (
            <span className={`status ${conversation.lead_status}`} aria-label="Lead status">
              {conversation.lead_status}
            </span>
          )}
        </div>
        {(conversation.ai_paused || conversation.needs_handoff) && (
          <button className="secondary" onClick={() => void resume()}>
            Resume AI
          </button>
        )}
      </header>
      <div className="thread-scroll">
        <MessageThread messages={messages} />
        <div ref={end} />
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {conversation.opted_out ? (
        <p className="empty">This number opted out; messages cannot be sent.</p>
      ) : (
        <form
          className="composer"
          onSubmit={(event) => {
            event.preventDefault();
            void send();
          }}
        >
          <textarea
            aria-label="Message"
            value={draft}
            maxLength={1600}
            placeholder={session.user.name ? `Message as ${session.user.name}` : 'Message'}
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && !event.shiftKey) {
                event.preventDefault();
                void send();
              }
            }}
          />
          <button type="submit" disabled={busy || !draft.trim()}>
            Send
          </button>
        </form>
      )}
    </section>
  );
}

export function Conversations() {
  const { api, session, parent } = useDashboard();
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [total, setTotal] = useState(0);
  const [handoffOnly, setHandoffOnly] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    const page = dataOf(
      await api.GET('/accounts/{id}/conversations', {
        params: {
          path: { id: session.account.id },
          query: { limit: 250, needs_handoff: handoffOnly ? 'true' : undefined },
        },
      }),
    );
    setConversations(page.conversations);
    setTotal(page.total);
  }, [api, handoffOnly, session.account.id]);

  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);
  useLiveChanges((changes) => {
    // A lead's status shows in its conversation too.
    if (changes.resync || changes.conversations.length > 0 || changes.leads.length > 0)
      void load().catch(() => undefined);
  });

  const select = (phone: string) => {
    setSelected(phone);
    parent.post({ type: 'service:conversation_selected', data: { phone } });
  };
  const current = conversations.find((conversation) => conversation.phone === selected);

  return (
    <div className="split">
      <aside className="list-pane">
        <div className="toolbar">
          <label className="check">
            <input
              type="checkbox"
              checked={handoffOnly}
              onChange={(event) => setHandoffOnly(event.target.checked)}
            />
            Needs attention only
          </label>
          <span className="count">{total}</span>
        </div>
        {error && <p className="error">{error}</p>}
        <ConversationList conversations={conversations} selected={selected} onSelect={select} />
      </aside>
      {current ? (
        <Thread key={current.phone} conversation={current} onChanged={() => void load()} />
      ) : (
        <section className="thread-pane placeholder">
          <p className="empty">Select a conversation.</p>
        </section>
      )}
    </div>
  );
}
