import type { z } from 'zod';
import * as accounts from './accounts';
import * as ai from './ai';
import * as checklist from './checklist';
import * as consent from './consent';
import * as compliance from './compliance';
import * as leads from './leads';
import * as messaging from './messaging';
import * as partners from './partners';
import * as requirements from './requirements';
import * as sequences from './sequences';
import * as webhooks from './webhooks';

/**
 * Every event type on the log. To add one: define it in its feature's file with `defineEvent` and
 * list it here; the codec registers its schema and the union below picks it up.
 */
export const eventCatalog = [
  partners.partnerCreated,
  accounts.accountCreated,
  accounts.accountUpdated,
  accounts.accountDeactivated,
  accounts.accountReactivated,
  accounts.accountPhoneNumberReleased,
  accounts.teamMemberInvited,
  leads.leadCreated,
  leads.leadUpdated,
  leads.leadStatusChanged,
  leads.leadDeleted,
  requirements.requirementCreated,
  requirements.requirementUpdated,
  requirements.requirementDeleted,
  messaging.messageReceived,
  messaging.messageOutboundRequested,
  messaging.messageSent,
  messaging.messageFailed,
  messaging.messageHeld,
  messaging.messageStatusUpdated,
  messaging.conversationStarted,
  messaging.conversationReplyReceived,
  messaging.conversationAiPaused,
  messaging.conversationAiResumed,
  messaging.conversationHandoffRequested,
  messaging.conversationHandoffCleared,
  messaging.leadOptedOut,
  messaging.leadOptedIn,
  sequences.sequenceCreated,
  sequences.sequenceUpdated,
  sequences.sequenceDeleted,
  sequences.sequenceUnenrolled,
  sequences.sequenceEnrolled,
  sequences.sequenceLeadsEnrolled,
  sequences.sequenceStepSent,
  sequences.sequenceStepSkipped,
  sequences.sequenceStepDeferred,
  sequences.sequenceCompleted,
  sequences.sequenceReplyReceived,
  checklist.checklistItemCollected,
  checklist.checklistCompleted,
  ai.aiTurnCompleted,
  ai.aiPromptUpdated,
  ai.contextFileUploaded,
  ai.contextFileDeleted,
  ai.contextUrlAdded,
  ai.contextUrlFetched,
  ai.contextUrlFetchFailed,
  ai.contextUrlDeleted,
  sequences.sequenceAiStepRequested,
  sequences.sequenceAiStepFailed,
  sequences.sequenceStepHeld,
  webhooks.webhookCreated,
  webhooks.webhookUpdated,
  webhooks.webhookDeleted,
  webhooks.webhookDisabled,
  webhooks.webhookSecretResealed,
  webhooks.webhookDeliveryFailed,
  messaging.messageInboundReceived,
  consent.leadConsentGranted,
  sequences.sequenceStepHeldForConsent,
  compliance.registrationSubmitted,
  leads.leadErased,
  compliance.registrationStepChanged,
  compliance.registrationResourceCreated,
  accounts.accountErased,
  accounts.accountContentExpired,
] as const;

type Catalog = (typeof eventCatalog)[number];
export type DomainEvent = z.infer<Catalog['schema']>;
export type EventType = DomainEvent['type'];
export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;
export type EventData<T extends EventType> = EventOf<T>['data'];

/** What a decider returns: the type and data; the envelope is stamped when the event is appended. */
export type NewEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];

export const eventDefinitionsByType: ReadonlyMap<string, Catalog> = new Map(
  eventCatalog.map((definition) => [definition.type, definition]),
);

export {
  accounts,
  ai,
  checklist,
  compliance,
  consent,
  leads,
  messaging,
  partners,
  requirements,
  sequences,
  webhooks,
};
export { sequenceStepRefSchema, sequenceStepSchema, sequenceStepTypes } from './sequences';
export { sendingRateSchema, sendingWindowSchema, teamMemberRoles } from './accounts';
export { leadOrigins, leadStatuses, leadStatusSchema } from './leads';
export { consentMethods, consentRecordedVia } from './consent';
export {
  complianceAnswers,
  deliveryStatuses,
  messageFailureReasons,
  messageHoldReasons,
  messageSources,
} from './messaging';
export { requirementTypes, requirementTypeSchema } from './requirements';
export { brandingSchema, metadataSchema } from './shared';
export {
  businessTypes,
  businessVerticals,
  campaignUseCases,
  carrierResources,
  contactJobPositions,
  registrationProfileSchema,
  registrationStatuses,
  registrationSteps,
} from './compliance';
