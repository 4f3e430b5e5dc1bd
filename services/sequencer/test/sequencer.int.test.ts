import { accountEvents } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import {
  HOUR,
  clock,
  system,
  acme,
  sequencer,
  useSequencerSystem,
  phoneNumber,
  threeSteps,
  setUp,
  enrolledLead,
  bodiesOf,
  leadOf,
  inbound,
  settled,
} from './sequencer-system';

useSequencerSystem();

describe('the sequencer', () => {
  it('sends each step after its delay and completes the enrollment', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone, enrolled } = await enrolledLead(accountId, sequenceId);
    expect(enrolled.message_sent).toBe(true);
    clock.advance(23 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    clock.advance(HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
    expect((await leadOf(accountId, phone)).sequence).toMatchObject({ status: 'active', current_step: 2 });
    clock.advance(24 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one', 'Day two']);
    expect((await leadOf(accountId, phone)).sequence).toEqual({
      sequence_id: sequenceId,
      name: 'Nurture',
      status: 'completed',
      current_step: 3,
      total_steps: 3,
      next_step_at: null,
      hold_reason: null,
    });
    expect((await acme.get(`/accounts/${accountId}/sequences/${sequenceId}`)).body).toMatchObject({
      enrolled_count: 1,
      completed_count: 1,
    });
    const usage = (await acme.get(`/usage?account_id=${accountId}&period=2026-03`)).body;
    expect(usage.totals.sequences_completed).toBe(1);
    const completed = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.completed' && event.account_id === accountId,
    );
    expect(completed).toMatchObject([{ data: { phone, sequence_name: 'Nurture', total_steps: 3 } }]);

    // Completed: enrolling again starts over.
    const again = await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
    expect(again.body).toMatchObject({ action: 'reactivated', message_sent: true });
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one', 'Day two', 'Hi Ana']);
  });

  it('skips skip_if_replied steps once the lead replied, tells the partner, and still completes', async () => {
    const run = await sequencer();
    const { accountId, number, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    expect((await inbound(number, phone, 'Who is this?')).statusCode).toBeLessThan(300);
    clock.advance(24 * HOUR);
    await settled(run);
    clock.advance(24 * HOUR);
    await settled(run);
    // Step 1 skipped (it skips on reply); step 2 does not.
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day two']);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('completed');
    const events = (await accountEvents(system.services)).filter((event) => event.account_id === accountId);
    expect(events.filter((event) => event.type === 'sequence.reply_received')).toMatchObject([
      { data: { phone, sequence_name: 'Nurture', current_step: 1, message_body: 'Who is this?' } },
    ]);
    expect(events.filter((event) => event.type === 'sequence.step_skipped')).toMatchObject([
      { data: { step_order: 1, reason: 'replied' } },
    ]);
  });

  it('pauses a deactivated account and sends the overdue step once at reactivation', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    await acme.delete(`/accounts/${accountId}`);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('paused');
    clock.advance(72 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    await acme.patch(`/accounts/${accountId}`, { status: 'active' });
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
    expect((await leadOf(accountId, phone)).sequence).toMatchObject({
      status: 'active',
      current_step: 2,
      next_step_at: new Date(clock.now().getTime() + 24 * HOUR).toISOString(),
    });
  });

  it('sends nothing from an inactive sequence until it is active again', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    await acme.patch(`/accounts/${accountId}/sequences/${sequenceId}`, { is_active: false });
    clock.advance(48 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    await acme.patch(`/accounts/${accountId}/sequences/${sequenceId}`, { is_active: true });
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
  });

  it('stops for good when the number opts out, and sends nothing after', async () => {
    const run = await sequencer();
    const { accountId, number, sequenceId } = await setUp({
      ...threeSteps,
      steps: threeSteps.steps.map((step) => ({ ...step, skip_if_replied: false })),
    });
    const { phone } = await enrolledLead(accountId, sequenceId);
    await inbound(number, phone, 'STOP');
    clock.advance(72 * HOUR);
    await settled(run);
    const bodies = await bodiesOf(accountId, phone);
    expect(bodies[0]).toBe('Hi Ana');
    expect(bodies.slice(1).every((body) => body.includes('unsubscribed'))).toBe(true);
    expect((await leadOf(accountId, phone)).sequence).toMatchObject({
      status: 'opted_out',
      next_step_at: null,
    });
  });

  it('sends nothing more to a lead deleted mid-sequence', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    await acme.delete(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}`);
    clock.advance(72 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
  });

  it('holds a step that falls due at night until the lead’s window opens', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'Evening',
      steps: [
        { type: 'fixed', message: 'One' },
        { type: 'fixed', message: 'Two', delay_hours: 12 },
      ],
    });
    // Step 1 falls due at 22:00 in New York: it waits for 08:00 there.
    const { phone, enrolled } = await enrolledLead(accountId, sequenceId);
    expect(enrolled.next_step_at).toBe('2026-03-03T13:00:00.000Z');
    clock.advance(12 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One']);
    clock.set(new Date('2026-03-03T13:00:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two']);
  });

  it('defers a step that became due outside the window (the window changed meanwhile)', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    // Changed before the clock moves: a tick the log wakes meanwhile must not find the step due under
    // the old window.
    await acme.patch(`/accounts/${accountId}`, { sending_window: { start: '11:00' } });
    clock.advance(24 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    expect((await leadOf(accountId, phone)).sequence.next_step_at).toBe('2026-03-03T16:00:00.000Z');
    clock.set(new Date('2026-03-03T16:00:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
  });
});

describe("the lead's state's rules", () => {
  it('sends a Florida lead at most 3 proactive messages in 24 hours, holds the 4th and sends it after', async () => {
    // Given an hourly sequence of four steps and a Miami lead enrolled at 10:00 EST,
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'Hourly',
      steps: [
        { type: 'fixed', message: 'One' },
        { type: 'fixed', message: 'Two', delay_hours: 1 },
        { type: 'fixed', message: 'Three', delay_hours: 1 },
        { type: 'fixed', message: 'Four', delay_hours: 1 },
      ],
    });
    const phone = phoneNumber('+1305555');
    await acme.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Ana' });
    await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
    for (let hour = 1; hour <= 3; hour++) {
      clock.advance(HOUR);
      await settled(run);
    }
    // when the fourth step falls due at 13:00, three hours after the first,
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two', 'Three']);
    // then it is held until the first message is 24 hours old, and the hold is on the log.
    const lead = await leadOf(accountId, phone);
    expect(lead.sequence).toMatchObject({
      status: 'active',
      current_step: 3,
      next_step_at: '2026-03-03T15:00:00.000Z',
    });
    const held = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.step_held' && event.account_id === accountId,
    );
    expect(held.map((event) => event.data)).toEqual([
      expect.objectContaining({
        phone,
        step_order: 3,
        stage: 'due',
        reason: 'frequency_cap',
        state: 'FL',
        zone: 'America/New_York',
        next_step_at: '2026-03-03T15:00:00.000Z',
      }),
    ]);
    // Ticking again before then sends nothing.
    clock.set(new Date('2026-03-03T14:59:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two', 'Three']);
    clock.set(new Date('2026-03-03T15:00:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two', 'Three', 'Four']);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('completed');
  });
});
