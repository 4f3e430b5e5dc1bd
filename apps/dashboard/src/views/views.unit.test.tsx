import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Schemas } from '../lib/api';
import { enrollmentLabel } from '../lib/enrollment';
import { formatTime } from '../lib/format';
import { ConversationList, MessageThread } from './Conversations';
import { ImportResult } from './leads/Importer';
import { leadChanges } from './leads/LeadEditor';
import { stepsBody } from './sequences/Builder';
import { delayLabel, StepList } from './sequences/StepList';
import { fileSize } from './settings/Context';
import { promptBody } from './settings/prompt-draft';

type Conversation = Schemas['Conversation'];

const conversation = (phone: string, fields: Partial<Conversation> = {}): Conversation => ({
  phone,
  name: null,
  preview: 'Hello',
  last_message_at: '2026-03-02T15:00:00Z',
  message_count: 1,
  needs_handoff: false,
  lead_status: 'new',
  in_sequence: false,
  opted_out: false,
  ai_paused: false,
  ai_paused_until: null,
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
            content_expired: false,
            sent_at: '2026-03-02T15:01:00Z',
            source: 'manual',
            sender_name: 'Dana',
            status: 'sent',
            held: null,
          },
          {
            id: '1',
            direction: 'inbound',
            body: 'First',
            content_expired: false,
            sent_at: '2026-03-02T15:00:00Z',
            status: 'received',
            held: null,
          },
        ]}
      />,
    );
    expect(html.indexOf('First')).toBeLessThan(html.indexOf('Second'));
    expect(html).toContain('Dana');
    expect(html).toContain('data-status="sent"');
    expect(html).toContain('Sent');
  });

  it("says a message's text was removed by the retention, keeping its time", () => {
    const html = renderToStaticMarkup(
      <MessageThread
        messages={[
          {
            id: '1',
            direction: 'inbound',
            body: '',
            content_expired: true,
            media: [],
            sent_at: '2026-03-02T15:00:00Z',
            status: 'received',
            held: null,
          },
        ]}
      />,
    );
    expect(html).toContain('data-expired');
    expect(html).toContain('Removed after the retention period');
  });
});

describe('held messages', () => {
  it('says why a queued message waits, and until when, instead of "Sending"', () => {
    const queued = (id: string, held: Schemas['Message']['held']) => ({
      id,
      direction: 'outbound' as const,
      body: `Step ${id}`,
      content_expired: false,
      sent_at: `2026-03-02T15:0${id}:00Z`,
      source: 'sequence' as const,
      sender_name: null,
      status: 'queued' as const,
      held,
    });
    const html = renderToStaticMarkup(
      <MessageThread
        messages={[
          queued('1', { reason: 'registration_pending', until: null }),
          queued('2', { reason: 'quiet_hours', until: '2026-03-03T14:00:00Z' }),
          queued('3', null),
        ]}
      />,
    );
    expect(html).toContain('Held: waiting for the carrier registration');
    expect(html).toContain(
      `Held: outside the lead&#x27;s sending hours until ${formatTime('2026-03-03T14:00:00Z')}`,
    );
    expect(html.match(/Held:/g)).toHaveLength(2);
    expect(html.match(/Sending/g)).toHaveLength(1);
    // Each line names who sent it, never starting with a bare separator.
    expect(html.match(/Sequence · /g)).toHaveLength(3);
    expect(html).not.toMatch(/class="meta"> · /);
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
          consents_recorded: 0,
          errors: [{ index: 1, phone: 'abc', code: 'invalid_phone', message: 'phone: Not a phone number.' }],
        }}
      />,
    );
    expect(html).toContain('2 imported, 0 updated, 1 unchanged, 1 refused.');
    expect(html).toMatch(/<td>3<\/td><td>abc<\/td><td>phone: Not a phone number.<\/td>/);
  });
});

describe('sequences', () => {
  it('says when each step goes out, in hours or days', () => {
    expect(delayLabel(0, true)).toBe('At once');
    expect(delayLabel(0, false)).toBe('Right after the previous step');
    expect(delayLabel(1, false)).toBe('1 hour after the previous step');
    expect(delayLabel(24, false)).toBe('1 day after the previous step');
    expect(delayLabel(72, true)).toBe('3 days after enrolling');
    expect(delayLabel(30, false)).toBe('30 hours after the previous step');
  });

  it('lists fixed and AI steps in order, with what skips them', () => {
    const html = renderToStaticMarkup(
      <StepList
        steps={[
          {
            order: 0,
            type: 'fixed',
            message: 'Hi {{first_name}}',
            instructions: null,
            delay_hours: 0,
            skip_if_replied: true,
          },
          {
            order: 1,
            type: 'ai',
            message: null,
            instructions: 'Ask about the budget',
            delay_hours: 48,
            skip_if_replied: false,
          },
        ]}
      />,
    );
    expect(html.indexOf('Hi {{first_name}}')).toBeLessThan(html.indexOf('Ask about the budget'));
    expect(html.match(/skipped if they replied/g)).toHaveLength(1);
    expect(html).toContain('2 days after the previous step');
  });

  it('sends only the text a step type uses, and whole hours', () => {
    expect(
      stepsBody([
        { type: 'fixed', message: ' Hello ', instructions: 'stale', delay_hours: '', skip_if_replied: true },
        {
          type: 'ai',
          message: 'stale',
          instructions: 'Follow up',
          delay_hours: '24',
          skip_if_replied: false,
        },
      ]),
    ).toEqual([
      { type: 'fixed', message: 'Hello', delay_hours: 0, skip_if_replied: true },
      { type: 'ai', instructions: 'Follow up', delay_hours: 24, skip_if_replied: false },
    ]);
  });

  it('reports an enrollment as the user needs to hear it', () => {
    expect(enrollmentLabel({ action: 'enrolled', message_sent: true, next_step_at: null })).toBe(
      'Enrolled; the first message is on its way.',
    );
    expect(enrollmentLabel({ action: 'already_enrolled', message_sent: false, next_step_at: null })).toBe(
      'Already enrolled.',
    );
    expect(
      enrollmentLabel({ action: 'reactivated', message_sent: false, next_step_at: '2020-01-02T15:00:00Z' }),
    ).toMatch(/^Enrolled again; next message /);
  });
});

describe('lead editing', () => {
  it('sends only the changed fields, an emptied one as null', () => {
    const lead = { name: 'Sam', email: 'sam@example.com', company: null, source: 'web', notes: null };
    expect(
      leadChanges(lead, { name: 'Sam Ortiz', email: '', company: ' ', source: 'web', notes: 'Call later' }),
    ).toEqual({ name: 'Sam Ortiz', email: null, notes: 'Call later' });
    expect(
      leadChanges(lead, { name: 'Sam', email: 'sam@example.com', company: '', source: 'web', notes: '' }),
    ).toEqual({});
  });
});

describe('AI settings', () => {
  it('sends a guided prompt with empty parts cleared, or the advanced prompt alone', () => {
    const draft = {
      system_prompt: ' Be brief. ',
      role_persona: 'Maya',
      tone_voice: '',
      response_style: ' ',
      conversation_rules: 'No rates',
      special_instructions: '',
    };
    expect(promptBody({ ...draft, mode: 'guided' })).toEqual({
      mode: 'guided',
      role_persona: 'Maya',
      tone_voice: null,
      response_style: null,
      conversation_rules: 'No rates',
      special_instructions: null,
    });
    expect(promptBody({ ...draft, mode: 'advanced' })).toEqual({
      mode: 'advanced',
      system_prompt: 'Be brief.',
    });
  });

  it('shows file sizes in bytes or kilobytes', () => {
    expect(fileSize(512)).toBe('512 B');
    expect(fileSize(1536)).toBe('1.5 KB');
    expect(fileSize(51_200)).toBe('50 KB');
  });
});
