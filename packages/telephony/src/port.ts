/**
 * What the service needs from a telephony provider. Two adapters: Twilio, used whenever Twilio
 * credentials are configured, and the local provider (a number pool and a sender that records
 * messages as delivered), so the whole product runs on one machine.
 */
/** A number bought for an account: `providerId` names it to the provider (Twilio's `PN…` sid). */
export interface ProvisionedNumber {
  phoneNumber: string;
  providerId: string;
}

/** A number `provisionNumber` got, with the account it was got for and when. */
export interface ProvisionedForAccount extends ProvisionedNumber {
  accountId: string;
  provisionedAt: Date;
}

export interface NumberProvider {
  /** Reserves a number no other account has, for `accountId`, with inbound SMS pointed at us. */
  provisionNumber(accountId: string): Promise<ProvisionedNumber>;
  /**
   * Whether a number a partner supplied is one this provider can receive SMS on for us: with Twilio,
   * one of our Twilio account's numbers. Without it, inbound SMS to the number would never reach us.
   */
  isOwnNumber(phoneNumber: string): Promise<boolean>;
  /**
   * Gives back a number `provisionNumber` got for an account that was then never created (its command
   * failed), so the provider stops billing for it. A number the provider no longer holds is no error.
   */
  releaseNumber(number: ProvisionedNumber): Promise<void>;
}

/** What reconciliation needs of a provider: the numbers `provisionNumber` got, and giving one back. */
export interface NumberInventory extends Pick<NumberProvider, 'releaseNumber'> {
  /** Every number `provisionNumber` got that the provider still holds, with the account it was got for. */
  listProvisioned(): Promise<ProvisionedForAccount[]>;
}

export interface OutboundSms {
  /** Our message id; the status callback URL carries it, so a callback can settle an unconfirmed send. */
  messageId: string;
  /**
   * The account sending it; the status callback URL carries it too, so a delivery report is
   * appended to the account's stream without looking the message up in a read model.
   */
  accountId?: string;
  from: string;
  to: string;
  body: string;
}

/** Delivery status as messages show it. */
export type DeliveryStatus = 'queued' | 'sent' | 'delivered' | 'undelivered' | 'failed';

export interface AcceptedSms {
  providerMessageId: string;
  status: DeliveryStatus;
}

/** A refusal the provider gave for certain: the message was not accepted and will not go out. */
export class SmsRejectedError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'SmsRejectedError';
  }
}

export interface SmsSender {
  /**
   * Hands one message to the provider. Throws SmsRejectedError when the provider certainly refused
   * it; any other error leaves it unknown whether the message was accepted.
   */
  send(message: OutboundSms): Promise<AcceptedSms>;
}
