import { accountEvents, eventually, registrationProfile } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { gatewayHarness } from './harness';

const { harness, append, gateway, account, request, outboxRow } = gatewayHarness();

const campaign = (previous: 'draft' | 'pending', status: 'pending' | 'approved') =>
  ({
    type: 'compliance.registration_step_changed',
    data: { submission_id: 'sub-1', step: 'campaign', previous_status: previous, status, reason: null },
  }) as const;

const sentBodies = (to: string) =>
  harness.twilio.messages.filter((message) => message.to === to).map((message) => message.body);

describe('the carriers’ sending rule in the gateway', () => {
  it('sends only the opt-out confirmation and the HELP answer before the campaign is approved, says why the rest waits, and sends it once approved', async () => {
    await account('acc-unregistered', '+15125553001');
    await append('acc-unregistered', [
      {
        type: 'compliance.registration_submitted',
        data: {
          submission_id: 'sub-1',
          profile: registrationProfile,
          tax_id: { last4: '6789', ciphertext: 'v2.sealed' },
        },
      },
      campaign('draft', 'pending'),
    ]);
    const running = await gateway({ registrationEnforced: true });
    const manual = request('+15125554001', 'Your rate lock expires Friday');
    const step = request('+15125554002', 'Checking in about your application', { source: 'sequence' });
    const stopConfirmation = request('+15125554003', 'Gateway Co: You are unsubscribed.', {
      source: 'system',
      answers: 'opt_out',
    });
    const help = request('+15125554004', 'Gateway Co: Reply STOP to unsubscribe.', {
      source: 'system',
      answers: 'help',
    });
    await append('acc-unregistered', [manual, step, stopConfirmation, help]);

    await eventually(async () =>
      (await outboxRow(help.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await running.dispatch();
    expect(sentBodies('+15125554003')).toEqual([stopConfirmation.data.body]);
    expect(sentBodies('+15125554004')).toEqual([help.data.body]);
    expect(sentBodies('+15125554001')).toEqual([]);
    expect(sentBodies('+15125554002')).toEqual([]);
    for (const held of [manual, step])
      expect(await outboxRow(held.data.message_id)).toMatchObject({
        state: 'pending',
        hold_reason: 'registration_pending',
      });

    // Decided again (the recheck), still pending: held, and said once.
    harness.clock.advance(11 * 60_000);
    await running.dispatch();
    expect(sentBodies('+15125554001')).toEqual([]);
    const heldEvents = (await accountEvents(harness.services)).filter(
      (event) => event.type === 'message.held',
    );
    expect(heldEvents.map((event) => event.data)).toEqual([
      {
        message_id: manual.data.message_id,
        phone: '+15125554001',
        reason: 'registration_pending',
        next_attempt_at: null,
      },
      {
        message_id: step.data.message_id,
        phone: '+15125554002',
        reason: 'registration_pending',
        next_attempt_at: null,
      },
    ]);

    // The approval releases them at once, with no recheck due.
    await append('acc-unregistered', [campaign('pending', 'approved')]);
    await eventually(async () =>
      (await outboxRow(step.data.message_id))?.state === 'sent' &&
      (await outboxRow(manual.data.message_id))?.state === 'sent'
        ? true
        : undefined,
    );
    expect(sentBodies('+15125554001')).toEqual([manual.data.body]);
    expect(sentBodies('+15125554002')).toEqual([step.data.body]);
  });

  it('fails a held manual message that outlived the queue instead of sending it on approval', async () => {
    await account('acc-stale', '+15125553002');
    await append('acc-stale', [
      {
        type: 'compliance.registration_submitted',
        data: {
          submission_id: 'sub-1',
          profile: registrationProfile,
          tax_id: { last4: '6789', ciphertext: 'v2.sealed' },
        },
      },
      campaign('draft', 'pending'),
    ]);
    const running = await gateway({ registrationEnforced: true, maxQueueAgeMs: 60 * 60_000 });
    const manual = request('+15125554011', 'Call me back today');
    await append('acc-stale', [manual]);
    await eventually(async () =>
      (await outboxRow(manual.data.message_id))?.hold_reason === 'registration_pending' ? true : undefined,
    );
    harness.clock.advance(2 * 60 * 60_000);
    await append('acc-stale', [campaign('pending', 'approved')]);
    await eventually(async () =>
      (await outboxRow(manual.data.message_id))?.state === 'failed' ? true : undefined,
    );
    await running.dispatch();
    expect(sentBodies('+15125554011')).toEqual([]);
    expect((await outboxRow(manual.data.message_id))?.report).toMatchObject({ data: { reason: 'expired' } });
  });

  it('sends at once where the rule is not enforced', async () => {
    await account('acc-unenforced', '+15125553003');
    await gateway();
    const manual = request('+15125554021', 'Welcome aboard');
    await append('acc-unenforced', [manual]);
    await eventually(async () =>
      (await outboxRow(manual.data.message_id))?.state === 'sent' ? true : undefined,
    );
  });
});
