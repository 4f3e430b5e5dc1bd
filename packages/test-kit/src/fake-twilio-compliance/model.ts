import type { IncomingMessage, ServerResponse } from 'node:http';

/** A Trust Hub bundle: a customer profile (the business) or a trust product (its A2P messaging profile). */
export interface FakeBundle {
  sid: string;
  kind: 'customer_profile' | 'trust_product';
  friendlyName: string;
  email: string;
  policySid: string;
  statusCallback: string | undefined;
  status: 'draft' | 'pending-review' | 'in-review' | 'twilio-rejected' | 'twilio-approved';
  errors: unknown[];
  /** The sids assigned to it (end users, supporting documents, profiles), in order. */
  assignments: string[];
  dateCreated: Date;
}

export interface FakeEndUser {
  sid: string;
  type: string;
  friendlyName: string;
  attributes: Record<string, unknown>;
}

export interface FakeSupportingDocument {
  sid: string;
  type: string;
  friendlyName: string;
  attributes: Record<string, unknown>;
}

export interface FakeAddress {
  sid: string;
  customerName: string;
  street: string;
  streetSecondary: string | null;
  city: string;
  region: string;
  postalCode: string;
  isoCountry: string;
}

export interface FakeBrand {
  sid: string;
  customerProfileBundleSid: string;
  a2pProfileBundleSid: string;
  status: 'PENDING' | 'IN_REVIEW' | 'APPROVED' | 'FAILED' | 'SUSPENDED';
  failureReason: string | null;
  errors: unknown[];
}

export interface FakeMessagingService {
  sid: string;
  friendlyName: string;
  useInboundWebhookOnNumber: boolean;
  /** The IncomingPhoneNumber sids in the service. */
  phoneNumberSids: string[];
}

export interface FakeCampaign {
  sid: string;
  messagingServiceSid: string;
  brandRegistrationSid: string;
  usecase: string;
  description: string;
  messageFlow: string;
  messageSamples: string[];
  hasEmbeddedLinks: boolean;
  hasEmbeddedPhone: boolean;
  directLending: boolean;
  optInKeywords: string[];
  optInMessage: string | null;
  optOutKeywords: string[];
  optOutMessage: string | null;
  helpKeywords: string[];
  helpMessage: string | null;
  campaignStatus: 'PENDING' | 'IN_PROGRESS' | 'VERIFIED' | 'FAILED';
  errors: unknown[];
}

export interface FakeCallback {
  url: string;
  form: Record<string, string>;
  /** False when it was dropped (`dropCallbacks`): Twilio's request never reached us. */
  delivered: boolean;
}

/**
 * Twilio's A2P 10DLC onboarding endpoints (Trust Hub, brand registrations, messaging services, US A2P
 * campaigns and their phone numbers), kept in memory. Reviews are decided by the test: `review`,
 * `setBrandStatus` and `setCampaignStatus` play the carriers, and a Trust Hub review posts its status
 * callback, signed as Twilio signs, through `deliver`.
 */
export interface FakeCompliance {
  customerProfiles: FakeBundle[];
  trustProducts: FakeBundle[];
  endUsers: FakeEndUser[];
  supportingDocuments: FakeSupportingDocument[];
  addresses: FakeAddress[];
  brands: FakeBrand[];
  services: FakeMessagingService[];
  campaigns: FakeCampaign[];
  callbacks: FakeCallback[];
  /** Trust Hub callbacks are lost on the way (a network fault): Twilio tried, we never heard. */
  dropCallbacks: boolean;
  /**
   * Posts a callback to our API: `url` as given to Twilio, the form, and its X-Twilio-Signature. By
   * default an HTTP POST; a test aims it at its app (`app.inject`).
   */
  deliver: (url: string, form: Record<string, string>, signature: string) => Promise<void>;
  /** Answers the next `count` onboarding requests with a 503, as during an outage. */
  failNext(count: number): void;
  /** Requests made to the onboarding endpoints (method and path), in order. */
  requests: string[];
  /** Decides a Trust Hub review (as Twilio's reviewers) and posts the bundle's status callback. */
  review(sid: string, status: 'twilio-approved' | 'twilio-rejected', errors?: unknown[]): Promise<void>;
  setBrandStatus(sid: string, status: FakeBrand['status'], failureReason?: string): void;
  setCampaignStatus(sid: string, status: FakeCampaign['campaignStatus'], errors?: unknown[]): void;
}

/** What the compliance endpoints share with the rest of the fake. */
export interface FakeComplianceContext {
  accountSid: string;
  /** The account's IncomingPhoneNumbers, by sid and number. */
  numbers: readonly { sid: string; phoneNumber: string }[];
  readForm(request: IncomingMessage): Promise<URLSearchParams>;
  json(response: ServerResponse, status: number, body: unknown): void;
  twilioError(status: number, code: number, message: string): unknown;
  sign(url: string, form: Record<string, string>): string;
}
