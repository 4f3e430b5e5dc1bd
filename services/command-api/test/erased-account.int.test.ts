import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { postInboundSms } from '../../../system-test/inbound-sms';

let system: TestSystem;
let acme: PartnerClient;

beforeAll(async () => {
  system = await startSystem();
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
});
afterAll(() => system?.close());

const inboundSms = (to: string, from: string, body: string) => postInboundSms(system, { to, from, body });

describe('an erased account', () => {
  it('shows when it was erased, takes no more writes but another erasure and its release, and keeps no SMS', async () => {
    const created = await acme.post('/accounts', { name: 'Forgotten Lending' });
    const account = created.body.id as string;
    const number = created.body.phone_number as string;
    expect(created.body.erased_at).toBeNull();
    expect(
      (await acme.post(`/accounts/${account}/leads`, { phone: '+15125550141', name: 'Ada' })).status,
    ).toBe(201);

    const erased = await acme.post(`/accounts/${account}/erase`);
    expect(erased.status).toBe(200);
    const shown = await acme.get(`/accounts/${account}`);
    expect(shown.body).toMatchObject({ status: 'deactivated', erased_at: erased.body.erased_at });

    // Back to use, or new personal data in it: each refused, nothing written.
    const refusals = [
      await acme.patch(`/accounts/${account}`, { status: 'active' }),
      await acme.patch(`/accounts/${account}`, { name: 'Renamed' }),
      await acme.post(`/accounts/${account}/leads`, { phone: '+15125550142', name: 'Grace' }),
      await acme.post(`/accounts/${account}/leads/bulk`, { leads: [{ phone: '+15125550143' }] }),
      await acme.post(`/accounts/${account}/team/invite`, { name: 'Lin', email: 'lin@example.com' }),
    ];
    for (const refusal of refusals) {
      expect(refusal.status).toBe(409);
      expect(refusal.body).toMatchObject({ code: 'account_erased' });
    }
    const after = await acme.get(`/accounts/${account}`);
    expect(after.body).toMatchObject({ name: 'Forgotten Lending', status: 'deactivated' });
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(0);
    expect((await acme.get(`/accounts/${account}/team`)).body.team_members).toEqual([]);

    // A person texting its number reaches no account here: nothing of theirs is kept.
    expect((await inboundSms(number, '+15125550144', 'Is anyone there?')).statusCode).toBe(404);
    expect((await acme.get(`/accounts/${account}/conversations`)).body.total).toBe(0);

    // What forgets or lets go still goes: erasing again answers as the first time, and the number
    // can be released for another account.
    const again = await acme.post(`/accounts/${account}/erase`);
    expect(again.status).toBe(200);
    expect(again.body.erased_at).toBe(erased.body.erased_at);
    expect((await acme.delete(`/accounts/${account}`)).status).toBe(200);
    expect((await acme.post(`/accounts/${account}/phone-number/release`)).status).toBe(200);
  });
});
