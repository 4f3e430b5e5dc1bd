import { eventually, registrationProfile as profile } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { gatewayHarness } from './harness';

const { harness, append, gateway, account, request } = gatewayHarness();

const campaign = (previous: 'draft' | 'pending', status: 'pending' | 'approved') =>
  ({
    type: 'compliance.registration_step_changed',
    data: { submission_id: 'sub-1', step: 'campaign', previous_status: previous, status, reason: null },
  }) as const;

const outboxOf = (accountId: string) =>
  harness.db
    .selectFrom('sms_outbox')
    .select(['message_id', 'phone', 'body', 'state'])
    .where('account_id', '=', accountId)
    .orderBy('message_id')
    .execute();

describe('erasing a lead in the SMS gateway', () => {
  it("drops the lead's queued and sent messages from the outbox and never sends it what was waiting; another lead's message still goes", async () => {
    const accountId = 'acc-erasure';
    const erasedPhone = '+15125557001';
    const otherPhone = '+15125557002';
    await account(accountId, '+15125556001');
    // Before its campaign is approved the account's messages wait in the outbox (held for registration),
    // except a HELP answer: so the erased lead has one message sent and two waiting.
    await append(accountId, [
      {
        type: 'compliance.registration_submitted',
        data: { submission_id: 'sub-1', profile, tax_id: { last4: '6789', ciphertext: 'v2.sealed' } },
      },
      campaign('draft', 'pending'),
    ]);
    const running = await gateway({ registrationEnforced: true });
    const help = request(erasedPhone, 'Gateway Co: Reply STOP to unsubscribe.', {
      source: 'system',
      answers: 'help',
    });
    const waiting = request(erasedPhone, 'Your rate lock expires Friday');
    const step = request(erasedPhone, 'Checking in about your W-2', { source: 'sequence' });
    const other = request(otherPhone, 'Your appraisal is booked');
    await append(accountId, [help, waiting, step, other]);
    await eventually(async () => {
      const rows = await outboxOf(accountId);
      return rows.length === 4 ? rows : undefined;
    });
    await eventually(async () =>
      harness.twilio.messages.some((message) => message.to === erasedPhone) ? true : undefined,
    );

    // The erasure as the partner API makes it: the event, and the subject's key destroyed.
    const keys = harness.services.personalDataKeys;
    const subject = keys.subjectOf(accountId, 'lead', erasedPhone);
    await append(accountId, [
      { type: 'lead.erased', data: { lead_id: 'lead-erased', phone: erasedPhone, subject } },
    ]);
    await keys.eraseSubject(accountId, subject);

    const remaining = await eventually(
      async () => {
        const rows = await outboxOf(accountId);
        return rows.length === 1 ? rows : undefined;
      },
      { message: "the erased lead's outbox rows are still there" },
    );
    expect(remaining).toEqual([
      expect.objectContaining({ message_id: other.data.message_id, phone: otherPhone }),
    ]);

    // The approval releases what waited: the other lead's message goes, nothing more to the erased one.
    await append(accountId, [campaign('pending', 'approved')]);
    await eventually(async () => ((await outboxOf(accountId))[0]?.state === 'sent' ? true : undefined));
    harness.clock.advance(60 * 60_000);
    await running.dispatch();
    expect(harness.twilio.messages.filter((message) => message.to === otherPhone).map((m) => m.body)).toEqual(
      [other.data.body],
    );
    expect(
      harness.twilio.messages.filter((message) => message.to === erasedPhone).map((m) => m.body),
    ).toEqual([help.data.body]);
    expect(await outboxOf(accountId)).toHaveLength(1);
  });
});

describe("expiring an account's content in the SMS gateway", () => {
  it('empties the bodies of messages sent before the cutoff and keeps later ones', async () => {
    const accountId = 'acc-retention';
    const phone = '+15125557011';
    await account(accountId, '+15125556011');
    await gateway();
    const sent = async (message: ReturnType<typeof request>) => {
      await append(accountId, [message]);
      await eventually(async () => {
        const row = (await outboxOf(accountId)).find((each) => each.message_id === message.data.message_id);
        return row?.state === 'sent' ? true : undefined;
      });
    };
    const old = request(phone, 'Your refinance quote is 4.1%');
    await sent(old);
    const cutoff = new Date(harness.clock.now().getTime() + 86_400_000);
    harness.clock.advance(2 * 86_400_000);
    const recent = request(phone, 'Your appraisal is booked');
    await sent(recent);

    await append(accountId, [
      { type: 'account.content_expired', data: { expired_before: cutoff.toISOString() } },
    ]);
    const rows = await eventually(
      async () => {
        const rows = await outboxOf(accountId);
        return rows.find((row) => row.message_id === old.data.message_id)?.body === '' ? rows : undefined;
      },
      { message: "the expired message's body is still in the outbox" },
    );
    expect(rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ message_id: old.data.message_id, body: '', state: 'sent' }),
        expect.objectContaining({
          message_id: recent.data.message_id,
          body: recent.data.body,
          state: 'sent',
        }),
      ]),
    );
  });
});
