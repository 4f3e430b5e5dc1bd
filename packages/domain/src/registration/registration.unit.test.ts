import { describe, expect, it } from 'vitest';
import { campaignKeywordReplies } from './campaign';
import { decideRegistrationOutcome, type ActionOutcome } from './outcome';
import { nextRegistrationAction, type RegistrationAction } from './plan';
import { nextCheckAt } from './schedule';
import { isUsLongCode, registrationHold } from './sending-rule';
import {
  evolveRegistration,
  registrationStatus,
  type Registration,
  type RegistrationEvent,
  type RegistrationProfile,
} from './state';
import { decideRegistrationSubmission, type SubmitRegistration } from './submit';

const profile: RegistrationProfile = {
  legal_name: 'Sunrise Home Loans LLC',
  business_type: 'llc',
  vertical: 'financial',
  website: 'https://sunrisehomeloans.example',
  address: {
    street: '100 Congress Ave',
    street_secondary: null,
    city: 'Austin',
    region: 'TX',
    postal_code: '78701',
    country: 'US',
  },
  contact: {
    first_name: 'Dana',
    last_name: 'Reyes',
    title: 'Compliance officer',
    job_position: 'director',
    email: 'dana@sunrisehomeloans.example',
    phone: '+15125550100',
  },
  use_case: 'mixed',
  use_case_description: 'Follow-up with mortgage applicants about their application and documents.',
  sample_messages: [
    'Hi Ana, this is Sunrise Home Loans: could you send us your latest W-2? Reply STOP to opt out.',
    'Sunrise Home Loans: your pre-approval is ready. Reply HELP for help, STOP to opt out.',
  ],
  message_flow:
    'Applicants check an SMS consent box on the loan application form at sunrisehomeloans.example.',
  opt_in_keywords: [],
  opt_in_message: null,
  direct_lending: true,
  has_embedded_links: false,
  has_embedded_phone: false,
};

const T0 = new Date('2026-03-02T15:00:00Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const schedule = { minMs: 30_000, maxMs: 3_600_000 };

const submit = (overrides: Partial<SubmitRegistration> = {}): SubmitRegistration => ({
  type: 'SubmitRegistration',
  submission_id: 'sub-1',
  profile,
  tax_id: { value: '12-3456789', last4: '6789', ciphertext: 'v2.sealed' },
  ...overrides,
});

/** A registration after its events, each `minutes` after the submission. */
function given(...events: [RegistrationEvent, number][]): Registration {
  let registration: Registration | undefined;
  for (const [event, minutes] of events) registration = evolveRegistration(registration, event, at(minutes));
  return registration!;
}
const submitted: [RegistrationEvent, number] = [
  decideRegistrationSubmission(submit(), {
    registration: undefined,
    currentTaxId: undefined,
  })[0] as RegistrationEvent,
  0,
];
const created = (resource: string, id: string, minutes: number): [RegistrationEvent, number] => [
  {
    type: 'compliance.registration_resource_created',
    data: { submission_id: 'sub-1', resource: resource as never, provider_id: id },
  },
  minutes,
];
const changed = (
  step: string,
  previous: string,
  status: string,
  minutes: number,
  reason: string | null = null,
): [RegistrationEvent, number] => [
  {
    type: 'compliance.registration_step_changed',
    data: {
      submission_id: 'sub-1',
      step: step as never,
      previous_status: previous as never,
      status: status as never,
      reason,
    },
  },
  minutes,
];

describe('submitting a registration', () => {
  it('starts a submission with the sealed tax id and its last four digits only', () => {
    const [event] = decideRegistrationSubmission(submit(), {
      registration: undefined,
      currentTaxId: undefined,
    });
    expect(event).toEqual({
      type: 'compliance.registration_submitted',
      data: { submission_id: 'sub-1', profile, tax_id: { last4: '6789', ciphertext: 'v2.sealed' } },
    });
    expect(JSON.stringify(event)).not.toContain('3456789');
  });

  it('changes nothing when the same profile and tax id come again (a retried PUT)', () => {
    const registration = given(submitted);
    const again = submit({
      submission_id: 'sub-2',
      tax_id: { value: '12-3456789', last4: '6789', ciphertext: 'v2.other' },
    });
    expect(decideRegistrationSubmission(again, { registration, currentTaxId: '12-3456789' })).toEqual([]);
  });

  it('refuses another profile while the carriers review the current one, or once they approved it', () => {
    const changedProfile = submit({
      submission_id: 'sub-2',
      profile: { ...profile, website: 'https://other.example' },
    });
    const inReview = given(submitted, changed('customer_profile', 'draft', 'pending', 1));
    expect(() =>
      decideRegistrationSubmission(changedProfile, { registration: inReview, currentTaxId: '12-3456789' }),
    ).toThrow(expect.objectContaining({ status: 409, code: 'registration_in_review' }));
    // A different tax id is a different profile too.
    const otherTaxId = submit({
      submission_id: 'sub-2',
      tax_id: { value: '98-7654321', last4: '4321', ciphertext: 'v2.x' },
    });
    expect(() =>
      decideRegistrationSubmission(otherTaxId, {
        registration: given(submitted),
        currentTaxId: '12-3456789',
      }),
    ).toThrow(expect.objectContaining({ code: 'registration_in_review' }));
    const approved = given(
      submitted,
      ...(['customer_profile', 'brand', 'campaign', 'number'] as const).map((step, i) =>
        changed(step, 'pending', 'approved', i + 1),
      ),
    );
    expect(registrationStatus(approved)).toBe('approved');
    expect(() =>
      decideRegistrationSubmission(changedProfile, { registration: approved, currentTaxId: '12-3456789' }),
    ).toThrow(expect.objectContaining({ status: 409, code: 'registration_approved' }));
  });

  it('takes a corrected profile once a step failed, starting every step again', () => {
    const failed = given(
      submitted,
      changed('customer_profile', 'draft', 'approved', 1),
      changed('brand', 'pending', 'failed', 5, 'EIN mismatch'),
    );
    expect(registrationStatus(failed)).toBe('failed');
    const corrected = submit({
      submission_id: 'sub-2',
      profile: { ...profile, legal_name: 'Sunrise Home Loans, LLC' },
    });
    const [event] = decideRegistrationSubmission(corrected, {
      registration: failed,
      currentTaxId: '12-3456789',
    });
    const after = evolveRegistration(failed, event as RegistrationEvent, at(10))!;
    expect(after.submission_id).toBe('sub-2');
    expect(Object.values(after.steps).map((step) => step.status)).toEqual([
      'draft',
      'draft',
      'draft',
      'draft',
    ]);
    expect(after.resources).toEqual({});
  });

  it("ignores a worker's late events about an earlier submission", () => {
    const registration = given(submitted);
    const late = evolveRegistration(
      registration,
      {
        type: 'compliance.registration_step_changed',
        data: {
          submission_id: 'sub-0',
          step: 'brand',
          previous_status: 'draft',
          status: 'failed',
          reason: 'old',
        },
      },
      at(1),
    );
    expect(late).toEqual(registration);
  });
});

describe('the next action', () => {
  it('walks the steps in order, looking at each review until it is approved', () => {
    const events: [RegistrationEvent, number][] = [submitted];
    const step = (...more: [RegistrationEvent, number][]) => {
      events.push(...more);
      return nextRegistrationAction(given(...events));
    };
    expect(nextRegistrationAction(given(submitted))).toEqual({ kind: 'submit_customer_profile' });
    expect(
      step(created('customer_profile', 'BU1', 1), changed('customer_profile', 'draft', 'pending', 1)),
    ).toEqual({
      kind: 'check_customer_profile',
      customer_profile_id: 'BU1',
    });
    expect(step(changed('customer_profile', 'pending', 'approved', 60))).toEqual({
      kind: 'submit_trust_product',
      customer_profile_id: 'BU1',
    });
    expect(step(created('trust_product', 'BU2', 61), changed('brand', 'draft', 'pending', 61))).toEqual({
      kind: 'register_brand',
      customer_profile_id: 'BU1',
      trust_product_id: 'BU2',
    });
    expect(step(created('brand', 'BN1', 90))).toEqual({ kind: 'check_brand', brand_id: 'BN1' });
    expect(step(changed('brand', 'pending', 'approved', 200))).toEqual({ kind: 'create_messaging_service' });
    expect(step(created('messaging_service', 'MG1', 201))).toEqual({
      kind: 'register_campaign',
      brand_id: 'BN1',
      messaging_service_id: 'MG1',
    });
    expect(step(created('campaign', 'QE1', 202), changed('campaign', 'draft', 'pending', 202))).toEqual({
      kind: 'check_campaign',
      campaign_id: 'QE1',
      messaging_service_id: 'MG1',
    });
    expect(step(changed('campaign', 'pending', 'approved', 3000))).toEqual({
      kind: 'attach_number',
      messaging_service_id: 'MG1',
    });
    expect(
      step(created('phone_number', 'PN1', 3001), changed('number', 'draft', 'approved', 3001)),
    ).toBeUndefined();
  });

  it('does nothing more once a step failed', () => {
    expect(
      nextRegistrationAction(
        given(
          submitted,
          created('customer_profile', 'BU1', 1),
          changed('customer_profile', 'draft', 'failed', 2, 'Address not found'),
        ),
      ),
    ).toBeUndefined();
  });
});

describe("recording an action's outcome", () => {
  const outcome = (
    registration: Registration,
    action: RegistrationAction,
    result: ActionOutcome,
    minutes: number,
  ) => decideRegistrationOutcome(registration, action, result, at(minutes), schedule);

  it('records what was created and the step it moved, then looks again on the check schedule', () => {
    const decision = outcome(
      given(submitted),
      { kind: 'submit_customer_profile' },
      { kind: 'created', resource: 'customer_profile', id: 'BU1', verdict: { status: 'pending' } },
      1,
    );
    expect(decision.events).toEqual([
      {
        type: 'compliance.registration_resource_created',
        data: { submission_id: 'sub-1', resource: 'customer_profile', provider_id: 'BU1' },
      },
      {
        type: 'compliance.registration_step_changed',
        data: {
          submission_id: 'sub-1',
          step: 'customer_profile',
          previous_status: 'draft',
          status: 'pending',
          reason: null,
        },
      },
    ]);
    expect(decision.nextAt).toEqual(new Date(at(1).getTime() + schedule.minMs));
  });

  it('keeps the brand pending while its trust product is reviewed, and goes on at once when that is approved', () => {
    const approvedProfile = given(
      submitted,
      created('customer_profile', 'BU1', 1),
      changed('customer_profile', 'draft', 'approved', 30),
    );
    const submittedProduct = outcome(
      approvedProfile,
      { kind: 'submit_trust_product', customer_profile_id: 'BU1' },
      { kind: 'created', resource: 'trust_product', id: 'BU2', verdict: { status: 'approved' } },
      31,
    );
    expect(submittedProduct.events.map((event) => event.type)).toEqual([
      'compliance.registration_resource_created',
      'compliance.registration_step_changed',
    ]);
    expect(submittedProduct.events[1]!.data).toMatchObject({ step: 'brand', status: 'pending' });
    const waiting = given(
      submitted,
      created('customer_profile', 'BU1', 1),
      changed('customer_profile', 'draft', 'approved', 30),
      created('trust_product', 'BU2', 31),
      changed('brand', 'draft', 'pending', 31),
    );
    const register = { kind: 'register_brand' as const, customer_profile_id: 'BU1', trust_product_id: 'BU2' };
    const stillReviewed = outcome(waiting, register, { kind: 'verdict', verdict: { status: 'pending' } }, 32);
    expect(stillReviewed.events).toEqual([]);
    expect(stillReviewed.nextAt).toEqual(new Date(at(32).getTime() + schedule.minMs));
    // After 4 hours under review, the next look is 2 hours later at most the cap (1 h).
    expect(
      outcome(waiting, register, { kind: 'verdict', verdict: { status: 'pending' } }, 31 + 240).nextAt,
    ).toEqual(new Date(at(31 + 240).getTime() + schedule.maxMs));
    const brandRegistered = outcome(
      waiting,
      register,
      { kind: 'created', resource: 'brand', id: 'BN1', verdict: { status: 'pending' } },
      40,
    );
    expect(brandRegistered.events).toEqual([
      {
        type: 'compliance.registration_resource_created',
        data: { submission_id: 'sub-1', resource: 'brand', provider_id: 'BN1' },
      },
    ]);
  });

  it('fails the step with the reason when the provider refuses or the carrier rejects, and stops', () => {
    const registration = given(submitted);
    const refused = outcome(
      registration,
      { kind: 'submit_customer_profile' },
      { kind: 'refused', reason: 'The website is not reachable.' },
      1,
    );
    expect(refused.events).toEqual([
      {
        type: 'compliance.registration_step_changed',
        data: {
          submission_id: 'sub-1',
          step: 'customer_profile',
          previous_status: 'draft',
          status: 'failed',
          reason: 'The website is not reachable.',
        },
      },
    ]);
    expect(refused.nextAt).toBeNull();
  });

  it('creates the messaging service without moving the campaign, then registers the campaign at once', () => {
    const brandApproved = given(
      submitted,
      created('customer_profile', 'BU1', 1),
      changed('customer_profile', 'draft', 'approved', 2),
      created('trust_product', 'BU2', 3),
      created('brand', 'BN1', 4),
      changed('brand', 'draft', 'approved', 5),
    );
    const decision = outcome(
      brandApproved,
      { kind: 'create_messaging_service' },
      { kind: 'created', resource: 'messaging_service', id: 'MG1', verdict: { status: 'approved' } },
      6,
    );
    expect(decision.events).toHaveLength(1);
    expect(decision.nextAt).toEqual(at(6));
  });

  it('is done once the number joined the approved campaign', () => {
    const campaignApproved = given(
      submitted,
      created('customer_profile', 'BU1', 1),
      changed('customer_profile', 'draft', 'approved', 2),
      created('trust_product', 'BU2', 3),
      created('brand', 'BN1', 4),
      changed('brand', 'draft', 'approved', 5),
      created('messaging_service', 'MG1', 6),
      created('campaign', 'QE1', 7),
      changed('campaign', 'draft', 'approved', 8),
    );
    const decision = outcome(
      campaignApproved,
      { kind: 'attach_number', messaging_service_id: 'MG1' },
      { kind: 'created', resource: 'phone_number', id: 'PN1', verdict: { status: 'approved' } },
      9,
    );
    expect(decision.events.at(-1)!.data).toMatchObject({
      step: 'number',
      previous_status: 'draft',
      status: 'approved',
    });
    expect(decision.nextAt).toBeNull();
  });
});

describe('the schedules', () => {
  it('looks at a review after half its age so far, between the bounds', () => {
    expect(nextCheckAt(at(0), at(0), schedule)).toEqual(new Date(at(0).getTime() + 30_000));
    expect(nextCheckAt(at(0), at(10), schedule)).toEqual(at(15));
    expect(nextCheckAt(at(0), at(60 * 24), schedule)).toEqual(at(60 * 25));
  });
});

describe('the sending rule', () => {
  const rule = (overrides: Partial<Parameters<typeof registrationHold>[0]> = {}) => ({
    enforced: true,
    campaignStatus: 'pending' as const,
    from: '+15125550123',
    ...overrides,
  });

  it('holds everything but opt-out confirmations and HELP answers before the campaign is approved', () => {
    for (const source of ['manual', 'sequence', 'ai'] as const)
      expect(registrationHold(rule(), { source })).toBe('registration_pending');
    expect(registrationHold(rule(), { source: 'system', answers: 'opt_out' })).toBeNull();
    expect(registrationHold(rule(), { source: 'system', answers: 'help' })).toBeNull();
    expect(registrationHold(rule(), { source: 'system', answers: 'opt_in' })).toBe('registration_pending');
    expect(registrationHold(rule(), { source: 'system' })).toBe('registration_pending');
    expect(registrationHold(rule({ campaignStatus: undefined }), { source: 'manual' })).toBe(
      'registration_pending',
    );
    expect(registrationHold(rule({ campaignStatus: 'failed' }), { source: 'ai' })).toBe(
      'registration_pending',
    );
  });

  it('lets everything go once the campaign is approved, or when the rule is not enforced', () => {
    expect(registrationHold(rule({ campaignStatus: 'approved' }), { source: 'sequence' })).toBeNull();
    expect(registrationHold(rule({ enforced: false }), { source: 'sequence' })).toBeNull();
  });

  it('governs only US long codes', () => {
    expect(isUsLongCode('+15125550123')).toBe(true);
    expect(isUsLongCode('+15555550100')).toBe(true);
    expect(isUsLongCode('+18005550123')).toBe(false);
    expect(isUsLongCode('+14165550123')).toBe(false);
    expect(isUsLongCode('+442079460000')).toBe(false);
    expect(isUsLongCode('12345')).toBe(false);
    expect(registrationHold(rule({ from: '+18885550100' }), { source: 'manual' })).toBeNull();
  });
});

describe('the campaign keywords', () => {
  it('names the replies the account actually sends, in its company name', () => {
    const replies = campaignKeywordReplies('Sunrise Home Loans');
    expect(replies.opt_out_keywords).toContain('STOP');
    expect(replies.opt_out_message).toMatch(/^Sunrise Home Loans: /);
    expect(replies.help_message).toMatch(/^Sunrise Home Loans: /);
    for (const word of [...replies.opt_out_keywords, ...replies.help_keywords])
      expect(word).toMatch(/^[A-Z0-9]+$/);
  });
});
