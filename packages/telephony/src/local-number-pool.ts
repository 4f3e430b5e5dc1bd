import { createDb } from '@leadline/runtime';
import { sql } from 'kysely';
import type { NumberInventory, NumberProvider } from './port';

/**
 * Numbers from the fictional +1 555 range, handed out in order from a Postgres sequence, which gives
 * each caller a different number without locking. The provider's allocations are its own state (as
 * Twilio's are), kept in `local_phone_numbers`; a number reserved by an account (one a partner supplied) is
 * skipped.
 * Like a remote provider it works on its own connection, outside the caller's transaction.
 */
export function createLocalNumberPool(
  databaseUrl: string,
): NumberProvider & NumberInventory & { close(): Promise<void> } {
  const db = createDb(databaseUrl, { maxConnections: 1 });
  return {
    close: () => db.destroy(),
    async provisionNumber(accountId) {
      for (;;) {
        const { rows } = await sql<{ phone_number: string }>`
          insert into local_phone_numbers (phone_number, account_id)
          select '+1555' || lpad(nextval('local_phone_number_seq')::text, 7, '0'), ${accountId}
          on conflict do nothing
          returning phone_number`.execute(db);
        const phoneNumber = rows[0]?.phone_number;
        if (!phoneNumber) continue;
        const inUse = await db
          .selectFrom('phone_number_reservations')
          .select('account_id')
          .where('phone_number', '=', phoneNumber)
          .executeTakeFirst();
        if (!inUse) return { phoneNumber, providerId: phoneNumber };
      }
    },
    // The local provider stands for a carrier that routes any number to us.
    isOwnNumber: async () => true,
    // The sequence never hands the number out again; the row goes, as a released Twilio number would.
    async releaseNumber({ phoneNumber }) {
      await db.deleteFrom('local_phone_numbers').where('phone_number', '=', phoneNumber).execute();
    },
    async listProvisioned() {
      const rows = await db
        .selectFrom('local_phone_numbers')
        .select(['phone_number', 'account_id', 'allocated_at'])
        .execute();
      return rows.map((row) => ({
        phoneNumber: row.phone_number,
        providerId: row.phone_number,
        accountId: row.account_id,
        provisionedAt: row.allocated_at,
      }));
    },
  };
}
