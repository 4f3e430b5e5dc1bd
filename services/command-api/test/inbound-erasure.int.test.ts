import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
beforeAll(async () => {
  system = await startSystem();
});
afterAll(() => system?.close());

const accountId = 'acc-inbound-erasure';

/** A STOP answered to Twilio, as the webhook keeps it: its receipt (decided or not) and its guard. */
async function answeredStop(phone: string, messageSid: string, decided: boolean) {
  const now = new Date();
  await system.services.db
    .insertInto('inbound_receipts')
    .values({
      message_sid: messageSid,
      account_id: accountId,
      received_at: now,
      decided_at: decided ? now : null,
    })
    .execute();
  await system.services.db
    .insertInto('opt_out_guards')
    .values({ account_id: accountId, phone, message_sid: messageSid, created_at: now })
    .execute();
}

const guardedPhones = async () =>
  (
    await system.services.db
      .selectFrom('opt_out_guards')
      .select('phone')
      .where('account_id', '=', accountId)
      .orderBy('phone')
      .execute()
  ).map((guard) => guard.phone);

describe('erasing a lead in the inbound decider', () => {
  it("drops the erased lead's decided opt-out guard, keeps one still undecided, and another lead's", async () => {
    const decidedPhone = '+15125550501';
    const undecidedPhone = '+15125550502';
    const otherPhone = '+15125550503';
    // Decided STOPs whose stored message is gone (as after an erasure took the lead's messages): the
    // usual sweep, which waits for the stored STOP, never removes their guards.
    await answeredStop(decidedPhone, 'SMerasure0001', true);
    await answeredStop(undecidedPhone, 'SMerasure0002', false);
    await answeredStop(otherPhone, 'SMerasure0003', true);

    const keys = system.services.personalDataKeys;
    const erasure = (phone: string) => {
      const subject = keys.subjectOf(accountId, 'lead', phone);
      return { type: 'lead.erased' as const, data: { lead_id: null, phone, subject } };
    };
    // The undecided one first: once the decided one is gone, both erasures were handled.
    await system.services.commands.append({
      stream: { topic: 'account', accountId },
      context: { partnerId: 'partner-1', actor: { kind: 'system', service: 'test' }, correlationId: 'erase' },
      events: [erasure(undecidedPhone), erasure(decidedPhone)],
      readYourWrites: false,
    });
    for (const phone of [undecidedPhone, decidedPhone])
      await keys.eraseSubject(accountId, keys.subjectOf(accountId, 'lead', phone));

    await eventually(async () => ((await guardedPhones()).includes(decidedPhone) ? undefined : true), {
      message: "the erased lead's decided opt-out guard is still kept",
    });
    expect(await guardedPhones()).toEqual([undecidedPhone, otherPhone]);
  });
});
