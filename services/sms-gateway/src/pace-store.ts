import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import type { PaceState } from './pacing';

/** A sending number's pace, as stored (see pacing.ts). */
export async function readPace(db: Kysely<Database>, phoneNumber: string): Promise<PaceState | undefined> {
  const row = await db
    .selectFrom('sms_number_pace')
    .select(['next_send_at', 'cap_day', 'sent_on_cap_day'])
    .where('phone_number', '=', phoneNumber)
    .executeTakeFirst();
  return row && { nextSendAt: row.next_send_at, capDay: row.cap_day, sentOnCapDay: row.sent_on_cap_day };
}

/** A number's next slot to claim: its pace as this pass read it (undefined: none stored) and as it will be. */
export interface PaceClaim {
  phoneNumber: string;
  accountId: string;
  read: PaceState | undefined;
  next: PaceState;
}

/**
 * Claims a number's next slot: stores `next` only if the pace is still what this pass read, so two
 * passes that both read the same pace (an account's claim lost and retaken, a number moved between
 * accounts) cannot both send in one slot; so gateways together never exceed a number's rate. Returns
 * one row when claimed, none when another took it. A statement, to run on its own or inside the mark's
 * (see markSending: the slot and the mark in one round trip).
 */
export function claimPaceStatement(claim: PaceClaim, now: Date) {
  const { phoneNumber, accountId, read, next } = claim;
  return read
    ? sql`update sms_number_pace
        set next_send_at = ${next.nextSendAt}, cap_day = ${next.capDay},
          sent_on_cap_day = ${next.sentOnCapDay}, account_id = ${accountId}, updated_at = ${now}
        where phone_number = ${phoneNumber} and next_send_at = ${read.nextSendAt}
          and sent_on_cap_day = ${read.sentOnCapDay} and cap_day = ${read.capDay}
        returning 1`
    : sql`insert into sms_number_pace (phone_number, account_id, next_send_at, cap_day, sent_on_cap_day, updated_at)
        values (${phoneNumber}, ${accountId}, ${next.nextSendAt}, ${next.capDay}, ${next.sentOnCapDay}, ${now})
        on conflict (phone_number) do nothing
        returning 1`;
}

/** Claims a number's next slot on its own (see claimPaceStatement); false when another took it. */
export async function claimPace(db: Kysely<Database>, claim: PaceClaim, now: Date): Promise<boolean> {
  const { rows } = await claimPaceStatement(claim, now).execute(db);
  return rows.length === 1;
}
