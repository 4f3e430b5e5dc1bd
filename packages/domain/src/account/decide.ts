import type { EventData, NewEvent } from '@leadline/events';
import { conflict, DomainError } from '../errors';
import { metadataChanges } from '../metadata';
import { DEFAULT_SENDING_WINDOW, type SendingWindow } from '../sequence/sending-window';

type Branding = EventData<'account.created'>['branding'];
type Metadata = Record<string, unknown>;
/** Each null: the deployment's default. */
export type SendingRate = NonNullable<EventData<'account.created'>['sending_rate']>;

export interface Account {
  id: string;
  status: 'active' | 'deactivated';
  name: string;
  company_name: string;
  forwarding_number: string | null;
  branding: Branding;
  metadata: Metadata;
  ai_pause_minutes: number;
  phone_number: string;
  /** The partner released the number: the account has none any more and stays deactivated. */
  phone_number_released: boolean;
  sending_window: SendingWindow;
  /** Proactive messages need the lead's recorded consent. */
  consent_required: boolean;
  /** Days message bodies and documents are kept; null: kept for good. */
  retention_days: number | null;
  /** What the account's number may carry; each null is the deployment's default. */
  sending_rate: SendingRate;
}

export interface AccountState {
  account: Account;
  /** Lowercased e-mail addresses of the account's team. */
  teamEmails: ReadonlySet<string>;
}

/** What the registry holds for a new account: its reserved slug, and whether its number is free. */
export interface AccountRegistryState {
  /** Reserved for this account, unique among the partner's (see slug-reservations). */
  slug: string;
  /** Whether another account holds the number's reservation (active, deactivated, any partner). */
  phoneNumberInUse: boolean;
}

export interface CreateAccount {
  type: 'CreateAccount';
  name: string;
  company_name?: string | undefined;
  phone_number: string;
  phone_number_provisioned: boolean;
  forwarding_number?: string | undefined;
  branding?: Partial<Branding> | undefined;
  metadata?: Metadata | undefined;
  ai_pause_minutes?: number | undefined;
  sending_window?: Partial<SendingWindow> | undefined;
  /** Default true: accounts created since consent was recorded require it. */
  consent_required?: boolean | undefined;
  retention_days?: number | null | undefined;
  sending_rate?: Partial<SendingRate> | undefined;
}

export type AccountCommand =
  | {
      type: 'UpdateAccount';
      name?: string | undefined;
      company_name?: string | undefined;
      forwarding_number?: string | null | undefined;
      branding?: Partial<Branding> | undefined;
      /** Merged into the account's metadata; a null value removes the key. */
      metadata?: Metadata | undefined;
      ai_pause_minutes?: number | undefined;
      /** The given fields replace the account's; the others are kept. */
      sending_window?: Partial<SendingWindow> | undefined;
      consent_required?: boolean | undefined;
      /** Null: kept for good. */
      retention_days?: number | null | undefined;
      /** The given fields replace the account's; null resets one to the deployment's default. */
      sending_rate?: Partial<SendingRate> | undefined;
      status?: 'active' | 'deactivated' | undefined;
    }
  | { type: 'DeactivateAccount' }
  | { type: 'ReleasePhoneNumber' }
  | {
      type: 'InviteTeamMember';
      member_id: string;
      email: string;
      name?: string | undefined;
      role: EventData<'team_member.invited'>['role'];
      phone_number?: string | undefined;
      forwarding_number?: string | undefined;
    };

/** How long a manual message pauses the AI when the account does not say: a day. */
export const DEFAULT_AI_PAUSE_MINUTES = 1440;

/** The account registry's decider: a new account gets its reserved slug and a number nobody else has. */
export function decideAccountCreation(command: CreateAccount, registry: AccountRegistryState): NewEvent[] {
  if (registry.phoneNumberInUse) {
    // The same answer whoever holds it (this partner or another, active or deactivated): the
    // conflict says nothing about the holder.
    throw conflict('phone_number_in_use', 'This phone number is not available.', {
      phone_number: command.phone_number,
    });
  }
  return [
    {
      type: 'account.created',
      data: {
        name: command.name,
        company_name: command.company_name ?? command.name,
        slug: registry.slug,
        phone_number: command.phone_number,
        phone_number_provisioned: command.phone_number_provisioned,
        forwarding_number: command.forwarding_number ?? null,
        branding: {
          logo_url: command.branding?.logo_url ?? null,
          accent_color: command.branding?.accent_color ?? null,
        },
        metadata: command.metadata ?? {},
        ai_pause_minutes: command.ai_pause_minutes ?? DEFAULT_AI_PAUSE_MINUTES,
        sending_window: { ...DEFAULT_SENDING_WINDOW, ...command.sending_window },
        consent_required: command.consent_required ?? true,
        retention_days: command.retention_days ?? null,
        sending_rate: {
          messages_per_second: command.sending_rate?.messages_per_second ?? null,
          daily_cap: command.sending_rate?.daily_cap ?? null,
        },
      },
    },
  ];
}

function changedFields(
  command: Extract<AccountCommand, { type: 'UpdateAccount' }>,
  account: Account,
): EventData<'account.updated'> {
  const changes: EventData<'account.updated'> = {};
  if (command.name !== undefined && command.name !== account.name) changes.name = command.name;
  if (command.company_name !== undefined && command.company_name !== account.company_name) {
    changes.company_name = command.company_name;
  }
  if (command.forwarding_number !== undefined && command.forwarding_number !== account.forwarding_number) {
    changes.forwarding_number = command.forwarding_number;
  }
  const branding = Object.fromEntries(
    Object.entries(command.branding ?? {}).filter(
      ([key, value]) => value !== undefined && value !== account.branding[key as keyof Branding],
    ),
  );
  if (Object.keys(branding).length > 0) changes.branding = branding;
  const sendingRate = Object.fromEntries(
    Object.entries(command.sending_rate ?? {}).filter(
      ([key, value]) => value !== undefined && value !== account.sending_rate[key as keyof SendingRate],
    ),
  );
  if (Object.keys(sendingRate).length > 0) changes.sending_rate = sendingRate;
  const metadata = metadataChanges(account.metadata, command.metadata);
  if (Object.keys(metadata).length > 0) changes.metadata = metadata;
  if (command.ai_pause_minutes !== undefined && command.ai_pause_minutes !== account.ai_pause_minutes) {
    changes.ai_pause_minutes = command.ai_pause_minutes;
  }
  if (command.consent_required !== undefined && command.consent_required !== account.consent_required) {
    changes.consent_required = command.consent_required;
  }
  if (command.retention_days !== undefined && command.retention_days !== account.retention_days) {
    changes.retention_days = command.retention_days;
  }
  if (command.sending_window) {
    const window = { ...account.sending_window, ...command.sending_window };
    if (window.start >= window.end) {
      throw new DomainError(400, 'invalid_sending_window', 'The sending window must end after it starts.');
    }
    if (JSON.stringify(window) !== JSON.stringify(account.sending_window)) changes.sending_window = window;
  }
  return changes;
}

/** The account's decider. Commands that change nothing produce no events (they are idempotent). */
export function decideAccount(command: AccountCommand, state: AccountState): NewEvent[] {
  const { account } = state;
  switch (command.type) {
    case 'UpdateAccount': {
      const events: NewEvent[] = [];
      const changes = changedFields(command, account);
      if (Object.keys(changes).length > 0) events.push({ type: 'account.updated', data: changes });
      if (command.status === 'deactivated' && account.status === 'active') {
        events.push({ type: 'account.deactivated', data: {} });
      }
      if (command.status === 'active' && account.status === 'deactivated') {
        if (account.phone_number_released) {
          throw conflict(
            'phone_number_released',
            'This account released its phone number and cannot be reactivated; create a new account.',
          );
        }
        events.push({ type: 'account.reactivated', data: {} });
      }
      return events;
    }
    case 'DeactivateAccount':
      return account.status === 'active' ? [{ type: 'account.deactivated', data: {} }] : [];
    case 'ReleasePhoneNumber':
      if (account.status === 'active') {
        throw conflict('account_active', 'Deactivate the account before releasing its phone number.');
      }
      return account.phone_number_released
        ? []
        : [{ type: 'account.phone_number_released', data: { phone_number: account.phone_number } }];
    case 'InviteTeamMember': {
      if (state.teamEmails.has(command.email.toLowerCase())) {
        throw new DomainError(409, 'team_member_exists', 'This e-mail address is already on the team.');
      }
      return [
        {
          type: 'team_member.invited',
          data: {
            member_id: command.member_id,
            email: command.email,
            name: command.name ?? null,
            role: command.role,
            phone_number: command.phone_number ?? null,
            forwarding_number: command.forwarding_number ?? null,
          },
        },
      ];
    }
    default: {
      const unknownCommand: never = command;
      throw new Error(`Unknown command ${(unknownCommand as { type: string }).type}`);
    }
  }
}
