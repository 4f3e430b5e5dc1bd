import { describe, expect, it } from 'vitest';
import {
  decideAccount,
  decideAccountCreation,
  type Account,
  type AccountState,
  type CreateAccount,
} from './decide';
import { uniqueSlug } from './slug';
import { DEFAULT_SENDING_WINDOW } from '../sequence/sending-window';

const account: Account = {
  id: 'acc-1',
  status: 'active',
  name: 'Acme',
  company_name: 'Acme Inc',
  forwarding_number: null,
  branding: { logo_url: null, accent_color: '#000000' },
  metadata: { tier: 'gold', region: 'tx' },
  ai_pause_minutes: 1440,
  phone_number: '+15125550100',
  phone_number_released: false,
  sending_window: DEFAULT_SENDING_WINDOW,
  consent_required: false,
  retention_days: null,
  sending_rate: { messages_per_second: null, daily_cap: null },
};
const given = (overrides: Partial<Account> = {}, teamEmails: string[] = []): AccountState => ({
  account: { ...account, ...overrides },
  teamEmails: new Set(teamEmails),
});

const create: CreateAccount = {
  type: 'CreateAccount',
  name: 'Acme Homes',
  phone_number: '+15125550100',
  phone_number_provisioned: true,
};

describe('account creation', () => {
  it('defaults the company name to the name and takes the slug reserved for it', () => {
    const [event] = decideAccountCreation(create, {
      slug: 'acme-homes-2',
      phoneNumberInUse: false,
    });
    expect(event).toEqual({
      type: 'account.created',
      data: {
        name: 'Acme Homes',
        company_name: 'Acme Homes',
        slug: 'acme-homes-2',
        phone_number: '+15125550100',
        phone_number_provisioned: true,
        forwarding_number: null,
        branding: { logo_url: null, accent_color: null },
        metadata: {},
        ai_pause_minutes: 1440,
        sending_window: DEFAULT_SENDING_WINDOW,
        consent_required: true,
        retention_days: null,
        sending_rate: { messages_per_second: null, daily_cap: null },
      },
    });
  });

  it('requires consent for proactive messages unless the partner says otherwise', () => {
    const [optedOut] = decideAccountCreation(
      { ...create, consent_required: false },
      { slug: 'acme-homes', phoneNumberInUse: false },
    );
    expect(optedOut).toMatchObject({ data: { consent_required: false } });
  });

  it('refuses a number another account has', () => {
    expect(() => decideAccountCreation(create, { slug: 'acme-homes', phoneNumberInUse: true })).toThrow(
      expect.objectContaining({ status: 409, code: 'phone_number_in_use' }),
    );
  });
});

describe('slugs', () => {
  it.each([
    ['Acme Homes', 'acme-homes'],
    ['  Crème   Brûlée & Co.  ', 'creme-brulee-co'],
    ['!!!', 'account'],
    ['ÅÄÖ 123', 'aao-123'],
  ])('%s becomes %s', (name, slug) => expect(uniqueSlug(name, new Set())).toBe(slug));

  it('counts suffixes from 2 past every taken one', () => {
    expect(uniqueSlug('Acme', new Set(['acme', 'acme-2', 'acme-3']))).toBe('acme-4');
  });
});

describe('the account decider', () => {
  it('emits only what changed', () => {
    const events = decideAccount(
      {
        type: 'UpdateAccount',
        name: 'Acme',
        company_name: 'Acme LLC',
        branding: { accent_color: '#000000', logo_url: 'https://x.test/l.png' },
        metadata: { tier: 'gold', region: null, source: 'crm' },
      },
      given(),
    );
    expect(events).toEqual([
      {
        type: 'account.updated',
        data: {
          company_name: 'Acme LLC',
          branding: { logo_url: 'https://x.test/l.png' },
          metadata: { region: null, source: 'crm' },
        },
      },
    ]);
  });

  it('turns consent_required on and off, and changes nothing when it is already so', () => {
    expect(decideAccount({ type: 'UpdateAccount', consent_required: true }, given())).toEqual([
      { type: 'account.updated', data: { consent_required: true } },
    ]);
    expect(
      decideAccount({ type: 'UpdateAccount', consent_required: true }, given({ consent_required: true })),
    ).toEqual([]);
  });

  it('changes only the given sending_rate fields, resets one with null, and changes nothing when it is already so', () => {
    const limited = given({ sending_rate: { messages_per_second: 2, daily_cap: 5000 } });
    expect(decideAccount({ type: 'UpdateAccount', sending_rate: { daily_cap: null } }, limited)).toEqual([
      { type: 'account.updated', data: { sending_rate: { daily_cap: null } } },
    ]);
    expect(
      decideAccount(
        { type: 'UpdateAccount', sending_rate: { messages_per_second: 2, daily_cap: 100 } },
        limited,
      ),
    ).toEqual([{ type: 'account.updated', data: { sending_rate: { daily_cap: 100 } } }]);
    expect(
      decideAccount({ type: 'UpdateAccount', sending_rate: { messages_per_second: 2 } }, limited),
    ).toEqual([]);
  });

  it('sets and clears retention_days, and changes nothing when it is already so', () => {
    expect(decideAccount({ type: 'UpdateAccount', retention_days: 30 }, given())).toEqual([
      { type: 'account.updated', data: { retention_days: 30 } },
    ]);
    expect(
      decideAccount({ type: 'UpdateAccount', retention_days: null }, given({ retention_days: 30 })),
    ).toEqual([{ type: 'account.updated', data: { retention_days: null } }]);
    expect(decideAccount({ type: 'UpdateAccount', retention_days: null }, given())).toEqual([]);
  });

  it('changes nothing when nothing differs, including removing an absent metadata key', () => {
    expect(
      decideAccount({ type: 'UpdateAccount', name: 'Acme', metadata: { missing: null } }, given()),
    ).toEqual([]);
  });

  it('deactivates an active account once, and reactivates through a status update', () => {
    expect(decideAccount({ type: 'DeactivateAccount' }, given())).toEqual([
      { type: 'account.deactivated', data: {} },
    ]);
    expect(decideAccount({ type: 'DeactivateAccount' }, given({ status: 'deactivated' }))).toEqual([]);
    expect(
      decideAccount({ type: 'UpdateAccount', status: 'active' }, given({ status: 'deactivated' })),
    ).toEqual([{ type: 'account.reactivated', data: {} }]);
    expect(decideAccount({ type: 'UpdateAccount', status: 'deactivated' }, given())).toEqual([
      { type: 'account.deactivated', data: {} },
    ]);
  });

  it('releases the number of a deactivated account once, and never reactivates it afterwards', () => {
    expect(() => decideAccount({ type: 'ReleasePhoneNumber' }, given())).toThrow(
      expect.objectContaining({ status: 409, code: 'account_active' }),
    );
    const deactivated = given({ status: 'deactivated' });
    expect(decideAccount({ type: 'ReleasePhoneNumber' }, deactivated)).toEqual([
      { type: 'account.phone_number_released', data: { phone_number: '+15125550100' } },
    ]);
    const released = given({ status: 'deactivated', phone_number_released: true });
    expect(decideAccount({ type: 'ReleasePhoneNumber' }, released)).toEqual([]);
    expect(() => decideAccount({ type: 'UpdateAccount', status: 'active' }, released)).toThrow(
      expect.objectContaining({ status: 409, code: 'phone_number_released' }),
    );
  });

  it('invites a member once per e-mail address, whatever its case', () => {
    const invite = {
      type: 'InviteTeamMember' as const,
      member_id: 'm-1',
      email: 'Ana@Example.com',
      role: 'member' as const,
    };
    expect(decideAccount(invite, given())).toEqual([
      {
        type: 'team_member.invited',
        data: {
          member_id: 'm-1',
          email: 'Ana@Example.com',
          name: null,
          role: 'member',
          phone_number: null,
          forwarding_number: null,
        },
      },
    ]);
    expect(() => decideAccount(invite, given({}, ['ana@example.com']))).toThrow(
      expect.objectContaining({ status: 409, code: 'team_member_exists' }),
    );
  });
});
