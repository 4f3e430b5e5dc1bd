import { newUuid } from '@leadline/runtime';
import { accountEvents, fakeClock, logSize } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let other: PartnerClient;
// 10:00 in New York, 07:00 in Los Angeles.
const clock = fakeClock(new Date('2026-03-02T15:00:00Z'));

beforeAll(async () => {
  system = await startSystem({ clock });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
});
afterAll(async () => {
  await system?.close();
});

const NY = '+12125550100';
const LA = '+12135550100';

async function newAccount(fields: Record<string, unknown> = {}) {
  // Steps go out without recorded consent here: the consent rule has its own tests.
  const { body } = await acme.post('/accounts', {
    name: 'Sunrise Mortgage',
    company_name: 'Sunrise',
    consent_required: false,
    ...fields,
  });
  return body.id as string;
}

const twoSteps = {
  name: 'Welcome',
  steps: [
    { type: 'fixed', message: 'Hi {{first_name}}, this is {{company}}.' },
    { type: 'fixed', message: 'Still there, {{first_name|friend}}?', delay_hours: 24 },
  ],
};

const messagesOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`)).body
    .messages as { body: string; source: string }[];

describe('sequence routes', () => {
  it('creates a sequence with ordered steps, defaults and zero counts', async () => {
    const accountId = await newAccount();
    const { status, body } = await acme.post(`/accounts/${accountId}/sequences`, twoSteps);
    expect(status).toBe(201);
    expect(body).toMatchObject({
      name: 'Welcome',
      description: null,
      is_active: true,
      is_default: false,
      enrolled_count: 0,
      completed_count: 0,
      steps: [
        { order: 0, type: 'fixed', delay_hours: 0, skip_if_replied: true, instructions: null },
        { order: 1, type: 'fixed', delay_hours: 24, skip_if_replied: true },
      ],
    });
    expect(body.created_at).toBe(clock.now().toISOString());
    expect((await acme.get(`/accounts/${accountId}/sequences/${body.id}`)).body).toEqual(body);
    const list = await acme.get(`/accounts/${accountId}/sequences?limit=1`);
    expect(list.body).toMatchObject({ total: 1, limit: 1, offset: 0, sequences: [{ id: body.id }] });
  });

  it.each([
    ['no steps', { name: 'x', steps: [] }, 'steps'],
    ['a fixed step without message', { name: 'x', steps: [{ type: 'fixed' }] }, 'steps.0.message'],
    ['an ai step without instructions', { name: 'x', steps: [{ type: 'ai' }] }, 'steps.0.instructions'],
    [
      'a negative delay',
      { name: 'x', steps: [{ type: 'fixed', message: 'a', delay_hours: -1 }] },
      'steps.0.delay_hours',
    ],
    [
      'a fractional delay',
      { name: 'x', steps: [{ type: 'fixed', message: 'a', delay_hours: 1.5 }] },
      'steps.0.delay_hours',
    ],
    [
      'an unknown variable',
      { name: 'x', steps: [{ type: 'fixed', message: 'Hi {{nickname}}' }] },
      'steps.0.message',
    ],
    [
      '51 steps',
      { name: 'x', steps: Array.from({ length: 51 }, () => ({ type: 'fixed', message: 'a' })) },
      'steps',
    ],
    ['an unknown field', { name: 'x', steps: [{ type: 'fixed', message: 'a' }], colour: 'red' }, ''],
  ])('refuses %s with a 400 that writes nothing', async (_case, body, field) => {
    const accountId = await newAccount();
    const before = await logSize(system.services);
    const response = await acme.post(`/accounts/${accountId}/sequences`, body);
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    if (field) expect(JSON.stringify(response.body)).toContain(field);
    expect(await logSize(system.services)).toBe(before);
  });

  it('allows 100 sequences per account, not 101', async () => {
    const accountId = await newAccount();
    for (let index = 0; index < 100; index++) {
      expect(
        (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, name: `S${index}` })).status,
      ).toBe(201);
    }
    const before = await logSize(system.services);
    const refused = await acme.post(`/accounts/${accountId}/sequences`, twoSteps);
    expect(refused).toMatchObject({ status: 400, body: { code: 'sequence_limit_reached' } });
    expect(await logSize(system.services)).toBe(before);
  });

  it('keeps one default per account', async () => {
    const accountId = await newAccount();
    const first = (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, is_default: true }))
      .body;
    const second = (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, is_default: true }))
      .body;
    expect((await acme.get(`/accounts/${accountId}/sequences/${first.id}`)).body.is_default).toBe(false);
    const patched = await acme.patch(`/accounts/${accountId}/sequences/${first.id}`, { is_default: true });
    expect(patched.body).toMatchObject({ id: first.id, is_default: true, name: 'Welcome' });
    expect((await acme.get(`/accounts/${accountId}/sequences/${second.id}`)).body.is_default).toBe(false);
  });

  it('counts active sequences on the account', async () => {
    const accountId = await newAccount();
    const a = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, is_active: false });
    expect((await acme.get(`/accounts/${accountId}`)).body.stats.active_sequences).toBe(1);
    await acme.patch(`/accounts/${accountId}/sequences/${a.id}`, { is_active: false });
    expect((await acme.get(`/accounts/${accountId}`)).body.stats.active_sequences).toBe(0);
  });

  it('answers 404 to another partner on every sequence route', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    const base = `/accounts/${accountId}/sequences`;
    const answers = await Promise.all([
      other.get(base),
      other.post(base, twoSteps),
      other.get(`${base}/${sequence.id}`),
      other.patch(`${base}/${sequence.id}`, { name: 'Mine' }),
      other.delete(`${base}/${sequence.id}`),
      other.post(`${base}/${sequence.id}/enroll`, { phone: NY }),
      other.post(`${base}/${sequence.id}/unenroll`, { phone: NY }),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([404, 404, 404, 404, 404, 404, 404]);
    expect((await acme.get(`${base}/${sequence.id}`)).body).toMatchObject({
      name: 'Welcome',
      enrolled_count: 0,
    });
    expect((await acme.get(`${base}/${newUuid()}`)).status).toBe(404);
  });
});

describe('enrollment', () => {
  it('sends step 0 at enrollment, rendered, through the send decider', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY, name: 'Dana Scully' });
    const enrolled = await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    expect(enrolled.body).toEqual({
      success: true,
      action: 'enrolled',
      message_sent: true,
      next_step_at: new Date(clock.now().getTime() + 24 * 3600_000).toISOString(),
      hold_reason: null,
    });
    expect(await messagesOf(accountId, NY)).toMatchObject([
      { body: 'Hi Dana, this is Sunrise.', source: 'sequence' },
    ]);
    const lead = (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(NY)}`)).body;
    expect(lead.status).toBe('contacted');
    expect(lead.sequence).toEqual({
      sequence_id: sequence.id,
      name: 'Welcome',
      status: 'active',
      current_step: 1,
      total_steps: 2,
      next_step_at: enrolled.body.next_step_at,
      hold_reason: null,
    });
    const conversations = (await acme.get(`/accounts/${accountId}/conversations`)).body.conversations;
    expect(conversations).toMatchObject([{ phone: NY, in_sequence: true }]);
    const again = await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    expect(again.body).toEqual({ ...enrolled.body, action: 'already_enrolled', message_sent: false });
    expect(await messagesOf(accountId, NY)).toHaveLength(1);
    expect((await acme.get(`/accounts/${accountId}/sequences/${sequence.id}`)).body.enrolled_count).toBe(1);
  });

  it('never sends "Hi ,": missing values fall back', async () => {
    const accountId = await newAccount();
    const sequence = (
      await acme.post(`/accounts/${accountId}/sequences`, {
        name: 'Fallbacks',
        steps: [
          {
            type: 'fixed',
            message: 'Hi {{first_name}}, {{last_name}} about {{property_address}} ({{name|friend}}).',
          },
        ],
      })
    ).body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    expect((await messagesOf(accountId, NY))[0]!.body).toBe('Hi there, about your property (friend).');
  });

  it('holds step 0 for the Los Angeles lead until 08:00 there, while the New York lead gets it now', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/leads/bulk`, { leads: [{ phone: NY }, { phone: LA }] });
    const ny = await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    const la = await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: LA });
    expect(ny.body.message_sent).toBe(true);
    expect(la.body).toMatchObject({ message_sent: false, next_step_at: '2026-03-02T16:00:00.000Z' });
    expect(await messagesOf(accountId, LA)).toEqual([]);
    expect(
      (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(LA)}`)).body.sequence,
    ).toMatchObject({
      current_step: 0,
      next_step_at: '2026-03-02T16:00:00.000Z',
    });
  });

  it('refuses unknown leads (404), inactive sequences (409) and opted-out numbers (409), writing nothing', async () => {
    const accountId = await newAccount();
    const inactive = (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, is_active: false }))
      .body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    const before = await logSize(system.services);
    expect(
      (await acme.post(`/accounts/${accountId}/sequences/${inactive.id}/enroll`, { phone: LA })).status,
    ).toBe(404);
    expect(
      await acme.post(`/accounts/${accountId}/sequences/${inactive.id}/enroll`, { phone: NY }),
    ).toMatchObject({
      status: 409,
      body: { code: 'sequence_inactive' },
    });
    // An id that cannot be one is bad input, as documented (`format: uuid`), not an unknown sequence.
    const malformed = await acme.post(`/accounts/${accountId}/sequences/nope/enroll`, { phone: NY });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual([{ field: 'params.sequence_id', message: 'Must be a UUID.' }]);
    expect(
      (await acme.post(`/accounts/${accountId}/sequences/${inactive.id}/enroll`, { phone: 'abc' })).status,
    ).toBe(400);
    expect(await logSize(system.services)).toBe(before);
  });

  it('refuses a number whose STOP was answered but is not decided yet (409), writing nothing', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    // The STOP was answered to Twilio (the guard is written then); the inbound decider has not run.
    await system.services.db
      .insertInto('opt_out_guards')
      .values({ account_id: accountId, phone: NY, message_sid: `SM${newUuid()}`, created_at: clock.now() })
      .execute();
    const before = await logSize(system.services);
    expect(
      await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY }),
    ).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
    expect(await logSize(system.services)).toBe(before);
    expect(
      (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(NY)}`)).body.sequence,
    ).toBeNull();
    expect(await messagesOf(accountId, NY)).toEqual([]);
    await system.services.db.deleteFrom('opt_out_guards').where('account_id', '=', accountId).execute();
  });

  it('keeps the steps an enrollment started with when the sequence changes', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps })).body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    const patched = await acme.patch(`/accounts/${accountId}/sequences/${sequence.id}`, {
      steps: [{ type: 'fixed', message: 'New one' }],
    });
    expect(patched.body.steps).toHaveLength(1);
    const lead = (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(NY)}`)).body;
    expect(lead.sequence).toMatchObject({ total_steps: 2, current_step: 1 });
  });

  it('cancels active enrollments when the sequence is deleted, and reactivates on enrolling again', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/leads/bulk`, {
      leads: [{ phone: NY }, { phone: '+12125550101' }],
    });
    await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: '+12125550101' });
    const deleted = await acme.delete(`/accounts/${accountId}/sequences/${sequence.id}`);
    expect(deleted.body).toEqual({ success: true, cancelled_enrollments: 2 });
    expect((await acme.get(`/accounts/${accountId}/sequences/${sequence.id}`)).status).toBe(404);
    const lead = (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(NY)}`)).body;
    expect(lead.sequence).toMatchObject({ status: 'cancelled', name: 'Welcome' });
    expect((await acme.get(`/accounts/${accountId}/conversations`)).body.conversations[0].in_sequence).toBe(
      false,
    );

    const another = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/sequences/${another.id}/enroll`, { phone: NY });
    await acme.delete(`/accounts/${accountId}/leads/${encodeURIComponent(NY)}`);
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    // The lead was deleted with its enrollment: the new lead is enrolled afresh.
    const enrolled = await acme.post(`/accounts/${accountId}/sequences/${another.id}/enroll`, { phone: NY });
    expect(enrolled.body.action).toBe('enrolled');
  });

  it('takes a lead out of a sequence: nothing more is sent, and enrolling again starts over', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    const path = `/accounts/${accountId}/sequences/${sequence.id}/unenroll`;
    expect((await acme.post(path, { phone: NY })).body).toEqual({ success: true, action: 'unenrolled' });
    const lead = (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(NY)}`)).body;
    expect(lead.sequence).toMatchObject({
      sequence_id: sequence.id,
      name: 'Welcome',
      status: 'cancelled',
      next_step_at: null,
    });
    expect((await acme.get(`/accounts/${accountId}/conversations`)).body.conversations[0].in_sequence).toBe(
      false,
    );
    const due = await system.services.db
      .selectFrom('sequence_enrollments')
      .select('id')
      .where('account_id', '=', accountId)
      .where('next_step_at', 'is not', null)
      .execute();
    expect(due).toEqual([]);
    expect((await acme.post(path, { phone: NY })).body).toEqual({ success: true, action: 'not_enrolled' });
    expect((await acme.post(path, { phone: '+12125550188' })).status).toBe(404);
    const again = await acme.post(`/accounts/${accountId}/sequences/${sequence.id}/enroll`, { phone: NY });
    expect(again.body.action).toBe('reactivated');
  });

  it('lists every sequence a lead is or was in, active ones first', async () => {
    const accountId = await newAccount();
    const first = (await acme.post(`/accounts/${accountId}/sequences`, twoSteps)).body;
    const second = (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, name: 'Nurture' }))
      .body;
    await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    const path = `/accounts/${accountId}/leads/${encodeURIComponent(NY)}/sequences`;
    expect((await acme.get(path)).body).toEqual({ enrollments: [] });
    await acme.post(`/accounts/${accountId}/sequences/${first.id}/enroll`, { phone: NY });
    await acme.post(`/accounts/${accountId}/sequences/${second.id}/enroll`, { phone: NY });
    await acme.post(`/accounts/${accountId}/sequences/${first.id}/unenroll`, { phone: NY });
    const { body } = await acme.get(path);
    expect(body.enrollments).toMatchObject([
      { sequence_id: second.id, name: 'Nurture', status: 'active', total_steps: 2, ended_at: null },
      { sequence_id: first.id, name: 'Welcome', status: 'cancelled', next_step_at: null },
    ]);
    expect(body.enrollments[1].ended_at).toEqual(expect.any(String));
    expect((await acme.get(`/accounts/${accountId}/leads/%2B12125550177/sequences`)).status).toBe(404);
    expect((await other.get(path)).status).toBe(404);
  });

  it('enrolls auto_sequence imports in the default sequence', async () => {
    const accountId = await newAccount();
    const sequence = (await acme.post(`/accounts/${accountId}/sequences`, { ...twoSteps, is_default: true }))
      .body;
    const single = await acme.post(`/accounts/${accountId}/leads`, { phone: NY, auto_sequence: true });
    expect(single.body.lead.sequence_enrolled).toBe(true);
    const plain = await acme.post(`/accounts/${accountId}/leads`, { phone: '+12125550109' });
    expect(plain.body.lead.sequence_enrolled).toBe(false);
    const again = await acme.post(`/accounts/${accountId}/leads`, {
      phone: NY,
      auto_sequence: true,
      name: 'X',
    });
    expect(again.body).toMatchObject({ action: 'updated', lead: { sequence_enrolled: true } });
    // Imported again without auto_sequence, a lead in the default sequence still says so.
    const plainAgain = await acme.post(`/accounts/${accountId}/leads`, { phone: NY });
    expect(plainAgain.body).toMatchObject({ action: 'skipped', lead: { sequence_enrolled: true } });
    const events = await accountEvents(system.services);
    const enrolled = events.flatMap((event) =>
      event.type === 'sequence.leads_enrolled' && event.data.sequence_id === sequence.id
        ? event.data.enrollments
        : [],
    );
    expect(enrolled.map((enrollment) => enrollment.phone)).toEqual([NY]);
    expect((await acme.get(`/accounts/${accountId}/sequences/${sequence.id}`)).body.enrolled_count).toBe(1);
  });

  it('keeps and returns the account sending window', async () => {
    const created = await acme.post('/accounts', {
      name: 'Windowed',
      sending_window: { start: '09:00' },
      consent_required: false,
    });
    expect(created.body.sending_window).toEqual({
      enabled: true,
      start: '09:00',
      end: '21:00',
      time_zone: 'America/New_York',
    });
    await acme.patch(`/accounts/${created.body.id}`, { sending_window: { time_zone: 'America/Chicago' } });
    expect((await acme.get(`/accounts/${created.body.id}`)).body.sending_window).toMatchObject({
      start: '09:00',
      time_zone: 'America/Chicago',
    });
    expect(
      (await acme.patch(`/accounts/${created.body.id}`, { sending_window: { time_zone: 'Mars/Base' } }))
        .status,
    ).toBe(400);
    expect(
      (await acme.patch(`/accounts/${created.body.id}`, { sending_window: { start: '22:00' } })).status,
    ).toBe(400);
  });
});
