import { webhookEnvelopeSchema, webhookEventData, type DomainEvent } from '@leadline/events';
import { describe, expect, it } from 'vitest';
import { leadName, toWebhookEvent, type LeadNameFields } from './mapping';

const envelope = {
  id: '0190f5d2-0000-7000-8000-000000000001',
  version: 1,
  account_id: '0190f5d2-0000-7000-8000-0000000000a1',
  partner_id: 'partner-1',
  occurred_at: '2026-03-08T10:00:00.000Z',
  actor: { kind: 'system', service: 'test' },
  correlation_id: 'c',
  causation_id: null,
} as const;

const leadCreated = {
  ...envelope,
  type: 'lead.created',
  data: {
    lead_id: 'lead-1',
    phone: '+15125550123',
    name: null,
    first_name: 'Ana',
    last_name: 'Silva',
    email: 'ana@example.com',
    company: null,
    notes: 'private notes',
    source: 'application',
    external_id: 'crm-9',
    property_address: null,
    metadata: { loan: 'refi' },
    status: 'new',
    auto_sequence: false,
    origin: 'api',
  },
} satisfies DomainEvent;

const statusChanged = {
  ...envelope,
  type: 'lead.status_changed',
  data: { lead_id: 'lead-1', phone: '+15125550123', previous_status: 'new', new_status: 'qualified' },
} satisfies DomainEvent;

const names = (entries: Record<string, LeadNameFields> = {}) => ({
  get: (accountId: string, phone: string) => entries[`${accountId}/${phone}`],
});

describe('lead_name', () => {
  it.each([
    [{ name: 'Ana Silva', first_name: 'X', last_name: 'Y' }, 'Ana Silva'],
    [{ name: '  ', first_name: 'Ana', last_name: 'Silva' }, 'Ana Silva'],
    [{ name: null, first_name: null, last_name: 'Silva' }, 'Silva'],
    [{ name: null, first_name: null, last_name: null }, null],
    [undefined, null],
  ])('%j is %j', (fields, expected) => expect(leadName(fields)).toBe(expected));
});

describe('mapping domain events to webhook events', () => {
  it('maps lead.created to the documented shape, without internal fields such as notes', () => {
    const mapped = toWebhookEvent(leadCreated, names());
    expect(mapped).toEqual({
      id: envelope.id,
      type: 'lead.created',
      account_id: '0190f5d2-0000-7000-8000-0000000000a1',
      created_at: '2026-03-08T10:00:00.000Z',
      data: {
        phone: '+15125550123',
        lead_name: 'Ana Silva',
        first_name: 'Ana',
        last_name: 'Silva',
        email: 'ana@example.com',
        company: null,
        source: 'application',
        external_id: 'crm-9',
        status: 'new',
        origin: 'api',
        metadata: { loan: 'refi' },
      },
    });
    expect(() =>
      webhookEnvelopeSchema('lead.created', webhookEventData['lead.created']).parse(mapped),
    ).not.toThrow();
  });

  it('maps lead.status_changed to exactly the spec fields, naming the lead from the relay lookup', () => {
    const mapped = toWebhookEvent(
      statusChanged,
      names({
        '0190f5d2-0000-7000-8000-0000000000a1/+15125550123': {
          name: 'Ana S.',
          first_name: null,
          last_name: null,
        },
      }),
    );
    expect(mapped?.data).toEqual({
      phone: '+15125550123',
      lead_name: 'Ana S.',
      previous_status: 'new',
      new_status: 'qualified',
    });
    expect(toWebhookEvent(statusChanged, names())?.data).toMatchObject({ lead_name: null });
  });

  it('keeps the four spec shapes exact', () => {
    const fields = (type: keyof typeof webhookEventData) => Object.keys(webhookEventData[type].shape).sort();
    expect(fields('checklist.completed')).toEqual(
      ['phone', 'lead_name', 'checklist_progress', 'completed_items', 'total_items'].sort(),
    );
    expect(fields('conversation.reply_received')).toEqual(
      ['phone', 'lead_name', 'message_body', 'message_direction'].sort(),
    );
    expect(fields('lead.status_changed')).toEqual(
      ['phone', 'lead_name', 'previous_status', 'new_status'].sort(),
    );
    expect(fields('conversation.handoff_requested')).toEqual(['phone', 'lead_name', 'reason'].sort());
    // Every event about a lead names it; the registration's events and an account's erasure are about
    // the account, and a person's erasure names nothing the person could be known by.
    const aboutNoLead = ['compliance.status_changed', 'lead.erased', 'account.erased'];
    for (const type of Object.keys(webhookEventData) as (keyof typeof webhookEventData)[]) {
      if (aboutNoLead.includes(type)) continue;
      expect(fields(type)).toEqual(expect.arrayContaining(['phone', 'lead_name']));
    }
  });

  it('maps a registration step change to compliance.status_changed, naming the account and the reason', () => {
    const mapped = toWebhookEvent(
      {
        ...envelope,
        type: 'compliance.registration_step_changed',
        data: {
          submission_id: 's-1',
          step: 'brand',
          previous_status: 'pending',
          status: 'failed',
          reason: 'The tax id does not match the legal name.',
        },
      },
      names(),
    );
    expect(mapped).toEqual({
      id: envelope.id,
      type: 'compliance.status_changed',
      account_id: envelope.account_id,
      created_at: envelope.occurred_at,
      data: {
        account_id: envelope.account_id,
        step: 'brand',
        previous_status: 'pending',
        new_status: 'failed',
        reason: 'The tax id does not match the legal name.',
      },
    });
    expect(() =>
      webhookEnvelopeSchema('compliance.status_changed', webhookEventData['compliance.status_changed']).parse(
        mapped,
      ),
    ).not.toThrow();
    // What the worker records about the carrier's side is not the partner's business.
    expect(
      toWebhookEvent(
        {
          ...envelope,
          type: 'compliance.registration_resource_created',
          data: { submission_id: 's-1', resource: 'brand', provider_id: 'BN123' },
        },
        names(),
      ),
    ).toBeUndefined();
  });

  it('maps message.held to the held message, the lead it is for, the reason and when it is decided again', () => {
    const held = (reason: 'quiet_hours' | 'registration_pending', at: string | null) =>
      toWebhookEvent(
        {
          ...envelope,
          type: 'message.held',
          data: {
            message_id: '0190f5d2-0000-7000-8000-0000000000b1',
            phone: '+15125550123',
            reason,
            next_attempt_at: at,
          },
        },
        names({
          '0190f5d2-0000-7000-8000-0000000000a1/+15125550123': {
            name: null,
            first_name: 'Ana',
            last_name: 'Silva',
          },
        }),
      );
    const quiet = held('quiet_hours', '2026-03-08T13:00:00.000Z');
    expect(quiet).toEqual({
      id: envelope.id,
      type: 'message.held',
      account_id: envelope.account_id,
      created_at: envelope.occurred_at,
      data: {
        phone: '+15125550123',
        lead_name: 'Ana Silva',
        message_id: '0190f5d2-0000-7000-8000-0000000000b1',
        reason: 'quiet_hours',
        next_attempt_at: '2026-03-08T13:00:00.000Z',
      },
    });
    // Waiting for the campaign's approval: no time to give.
    const pending = held('registration_pending', null);
    expect(pending?.data).toMatchObject({ reason: 'registration_pending', next_attempt_at: null });
    for (const mapped of [quiet, pending]) {
      expect(() =>
        webhookEnvelopeSchema('message.held', webhookEventData['message.held']).parse(mapped),
      ).not.toThrow();
    }
  });

  it('maps the conversation events to their documented shapes', () => {
    const lead = { phone: '+15125550123', lead_id: 'lead-1', lead_name: 'Ana Silva' };
    const started = toWebhookEvent(
      {
        ...envelope,
        type: 'conversation.started',
        data: {
          ...lead,
          message_id: 'm-1',
          direction: 'outbound',
          message_body: 'Hi Ana',
          message_source: 'manual',
        },
      },
      names(),
    );
    expect(started).toMatchObject({
      type: 'conversation.started',
      data: {
        phone: '+15125550123',
        lead_name: 'Ana Silva',
        message_body: 'Hi Ana',
        message_direction: 'outbound',
        message_source: 'manual',
      },
    });
    const reply = toWebhookEvent(
      {
        ...envelope,
        type: 'conversation.reply_received',
        data: { ...lead, message_id: 'm-2', message_body: 'Sure', message_direction: 'inbound' },
      },
      names(),
    );
    expect(reply?.data).toEqual({
      phone: '+15125550123',
      lead_name: 'Ana Silva',
      message_body: 'Sure',
      message_direction: 'inbound',
    });
    const handoff = toWebhookEvent(
      { ...envelope, type: 'conversation.handoff_requested', data: { ...lead, reason: 'asks for a human' } },
      names(),
    );
    expect(handoff?.data).toEqual({
      phone: '+15125550123',
      lead_name: 'Ana Silva',
      reason: 'asks for a human',
    });
    for (const mapped of [started, reply, handoff]) {
      const type = mapped!.type as keyof typeof webhookEventData;
      expect(() => webhookEnvelopeSchema(type, webhookEventData[type]).parse(mapped)).not.toThrow();
    }
  });

  it('maps the sequence events to their documented shapes', () => {
    const ref = {
      enrollment_id: 'e-1',
      sequence_id: '0190c4a2-5b1e-7c3d-8e4f-a1b2c3d4e5f6',
      lead_id: 'lead-1',
      phone: '+15125550123',
    };
    const completed = toWebhookEvent(
      {
        ...envelope,
        type: 'sequence.completed',
        data: { ...ref, lead_name: 'Ana Silva', sequence_name: 'Welcome', total_steps: 3 },
      },
      names(),
    );
    expect(completed).toMatchObject({
      type: 'sequence.completed',
      data: {
        phone: '+15125550123',
        lead_name: 'Ana Silva',
        sequence_id: '0190c4a2-5b1e-7c3d-8e4f-a1b2c3d4e5f6',
        sequence_name: 'Welcome',
        total_steps: 3,
      },
    });
    const reply = toWebhookEvent(
      {
        ...envelope,
        type: 'sequence.reply_received',
        data: {
          ...ref,
          lead_name: null,
          sequence_name: 'Welcome',
          current_step: 1,
          total_steps: 3,
          message_id: 'm-1',
          message_body: 'Yes please',
        },
      },
      names(),
    );
    expect(reply?.data).toEqual({
      phone: '+15125550123',
      lead_name: null,
      sequence_id: '0190c4a2-5b1e-7c3d-8e4f-a1b2c3d4e5f6',
      sequence_name: 'Welcome',
      current_step: 1,
      message_body: 'Yes please',
    });
    for (const mapped of [completed, reply]) {
      const type = mapped!.type as keyof typeof webhookEventData;
      expect(() => webhookEnvelopeSchema(type, webhookEventData[type]).parse(mapped)).not.toThrow();
    }
  });

  it('maps lead.erased to the lead id and the time only, never the phone or a name', () => {
    const erased = {
      ...envelope,
      type: 'lead.erased',
      data: { lead_id: '0190f5d2-0000-7000-8000-0000000000b1', phone: '+15125550123', subject: 'hash' },
    } satisfies DomainEvent;
    const mapped = toWebhookEvent(
      erased,
      names({ [`${envelope.account_id}/+15125550123`]: { name: 'Ana', first_name: null, last_name: null } }),
    );
    expect(mapped?.type).toBe('lead.erased');
    expect(mapped?.data).toEqual({
      lead_id: '0190f5d2-0000-7000-8000-0000000000b1',
      erased_at: envelope.occurred_at,
    });
    expect(() =>
      webhookEnvelopeSchema('lead.erased', webhookEventData['lead.erased']).parse(mapped),
    ).not.toThrow();
    expect(JSON.stringify(mapped)).not.toMatch(/5125550123|Ana|hash/);
  });

  it('maps account.erased to the erasure time and the count of people erased', () => {
    const erased = {
      ...envelope,
      type: 'account.erased',
      data: { erased_at: '2030-01-01T00:00:00.000Z', leads_erased: 3 },
    } satisfies DomainEvent;
    const mapped = toWebhookEvent(erased, names());
    expect(mapped).toMatchObject({
      type: 'account.erased',
      account_id: envelope.account_id,
      data: { erased_at: '2030-01-01T00:00:00.000Z', leads_erased: 3 },
    });
    expect(() =>
      webhookEnvelopeSchema('account.erased', webhookEventData['account.erased']).parse(mapped),
    ).not.toThrow();
  });

  it('tells partners nothing of an event appended after its person was erased', () => {
    const held = {
      ...envelope,
      type: 'message.held',
      data: {
        message_id: 'message-1',
        phone: '+15125550123',
        reason: 'quiet_hours',
        next_attempt_at: '2026-03-08T13:00:00.000Z',
      },
    } satisfies DomainEvent;
    expect(toWebhookEvent(held, names())?.type).toBe('message.held');
    const afterErasure = { ...held, data: { ...held.data, phone: 'erased:hash-of-the-phone' } };
    expect(toWebhookEvent(afterErasure, names())).toBeUndefined();
  });

  it('tells partners nothing about events without a mapping', () => {
    expect(
      toWebhookEvent(
        { ...envelope, type: 'lead.deleted', data: { lead_id: 'l', phone: '+15125550123' } },
        names(),
      ),
    ).toBeUndefined();
  });
});

describe('checklist webhooks', () => {
  const progress = { checklist_progress: 1, completed_items: 3, total_items: 3 };
  const collected = {
    ...envelope,
    type: 'checklist.item_collected',
    data: {
      lead_id: 'lead-1',
      phone: '+15125550123',
      lead_name: 'Ana Silva',
      requirement_id: '0190c4a2-5b1e-7c3d-8e4f-a1b2c3d4e5f7',
      requirement_name: 'Pay stub',
      requirement_type: 'document',
      value: null,
      document: { document_id: 'doc-1', content_type: 'application/pdf', file_size: 10 },
      message_id: 'msg-1',
      ...progress,
    },
  } satisfies DomainEvent;
  const links = { url: (id: string) => `https://api.example/v1/documents/${id}?sig`, verify: () => true };

  it('item_collected carries the signed file_url of a document and the README shape', () => {
    const mapped = toWebhookEvent(collected, names(), links)!;
    expect(webhookEnvelopeSchema(mapped.type, webhookEventData[mapped.type]).parse(mapped)).toEqual(mapped);
    expect(mapped.data).toEqual({
      phone: '+15125550123',
      lead_name: 'Ana Silva',
      requirement_id: '0190c4a2-5b1e-7c3d-8e4f-a1b2c3d4e5f7',
      requirement_name: 'Pay stub',
      requirement_type: 'document',
      value: null,
      file_url: 'https://api.example/v1/documents/doc-1?sig',
      collected_at: envelope.occurred_at,
      checklist_progress: 1,
    });
  });

  it('completed has exactly the spec shape', () => {
    const mapped = toWebhookEvent(
      {
        ...envelope,
        type: 'checklist.completed',
        data: { lead_id: 'lead-1', phone: '+15125550123', lead_name: null, ...progress },
      },
      names(),
    )!;
    expect(mapped.type).toBe('checklist.completed');
    expect(mapped.data).toEqual({
      phone: '+15125550123',
      lead_name: null,
      checklist_progress: 1,
      completed_items: 3,
      total_items: 3,
    });
  });
});

describe('lead_name of a lead known only by first and last name', () => {
  const lead = { phone: '+15125550123', lead_id: 'lead-1' };
  const known = names({
    [`${envelope.account_id}/+15125550123`]: { name: null, first_name: 'Ana', last_name: 'Silva' },
  });
  // As events written before the shared fallback carry it: the lead's `name`, null here.
  const events: DomainEvent[] = [
    {
      ...envelope,
      type: 'conversation.started',
      data: {
        ...lead,
        lead_name: null,
        message_id: 'm-1',
        direction: 'outbound',
        message_body: 'Hi',
        message_source: 'manual',
      },
    },
    {
      ...envelope,
      type: 'conversation.reply_received',
      data: { ...lead, lead_name: null, message_id: 'm-2', message_body: 'Hi', message_direction: 'inbound' },
    },
    {
      ...envelope,
      type: 'conversation.handoff_requested',
      data: { ...lead, lead_name: null, reason: 'asks for a human' },
    },
    statusChanged,
  ];

  it.each(events.map((event) => [event.type, event] as const))(
    'is first and last name joined in %s, as in lead.status_changed',
    (_type, event) => {
      expect(toWebhookEvent(event, known)?.data).toMatchObject({ lead_name: 'Ana Silva' });
    },
  );

  it("is the event's own name when the relay knows none", () => {
    const named = { ...events[2]!, data: { ...lead, lead_name: 'Ana S.', reason: 'x' } } as DomainEvent;
    expect(toWebhookEvent(named, names())?.data).toMatchObject({ lead_name: 'Ana S.' });
  });
});
