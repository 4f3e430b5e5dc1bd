import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ConversationList, MessageThread, type ConversationItem } from './Conversations';
import { ImportResult } from './Leads';

const conversation = (phone: string, fields: Partial<ConversationItem> = {}): ConversationItem => ({
  phone,
  name: null,
  preview: 'Hello',
  last_message_at: '2026-03-02T15:00:00Z',
  message_count: 1,
  needs_handoff: false,
  lead_status: 'new',
  opted_out: false,
  ai_paused: false,
  ...fields,
});

describe('conversation list', () => {
  it('badges the conversations that need a person, and names leads by name or phone', () => {
    const html = renderToStaticMarkup(
      <ConversationList
        conversations={[
          conversation('+15125550101', { name: 'Ana', needs_handoff: true }),
          conversation('+15125550102'),
        ]}
        selected={null}
        onSelect={() => undefined}
      />,
    );
    expect(html.match(/Needs attention/g)).toHaveLength(1);
    expect(html).toContain('Ana');
    expect(html).toContain('+1 (512) 555-0102');
  });
});

describe('message thread', () => {
  it('shows the newest message at the bottom, with the sender of manual messages', () => {
    const html = renderToStaticMarkup(
      <MessageThread
        messages={[
          {
            id: '2',
            direction: 'outbound',
            body: 'Second',
            sent_at: '2026-03-02T15:01:00Z',
            source: 'manual',
            sender_name: 'Dana',
            status: 'sent',
          },
          {
            id: '1',
            direction: 'inbound',
            body: 'First',
            sent_at: '2026-03-02T15:00:00Z',
            status: 'received',
          },
        ]}
      />,
    );
    expect(html.indexOf('First')).toBeLessThan(html.indexOf('Second'));
    expect(html).toContain('Dana');
  });
});

describe('CSV import result', () => {
  it('lists each refused row by its line in the file', () => {
    const html = renderToStaticMarkup(
      <ImportResult
        report={{
          imported: 2,
          updated: 0,
          skipped: 1,
          errors: [{ index: 1, phone: 'abc', code: 'invalid_phone', message: 'phone: Not a phone number.' }],
        }}
      />,
    );
    expect(html).toContain('2 imported, 0 updated, 1 unchanged, 1 refused.');
    expect(html).toMatch(/<td>3<\/td><td>abc<\/td><td>phone: Not a phone number.<\/td>/);
  });
});
