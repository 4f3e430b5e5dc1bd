/**
 * What the service needs from a telephony provider to give an account its own number. The local
 * pool stands in until the Twilio adapter exists, and whenever no Twilio credentials are configured.
 */
export interface NumberProvider {
  /** Reserves a number no other account has, for `accountId`. */
  provisionNumber(accountId: string): Promise<string>;
}
