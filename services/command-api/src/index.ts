/**
 * The conversation deciders, shared with the services that send on their own (the sequencer and the
 * AI agent): every outbound message, whoever writes it, is decided by the same rules (opt-out,
 * deactivation, AI pause, first-contact status).
 */
export {
  aiPaused,
  decideSendMessage,
  keywordOf,
  type ConversationState,
  type SendMessage,
} from './conversations/decide';
export { conversationState, conversationStates } from './conversations/queries';

/** The sequence deciders: the sequencer decides each due step with them, under the account's lock. */
export {
  decideAiStepOutcome,
  decideDueStep,
  heldEvent,
  inAppendOrder,
  stepDueAt,
  stepHold,
  type Enrollment,
  type StepState,
} from './sequences/decide';
export { accountStepStates, proactiveSends, stepState } from './sequences/queries';
export { sequenceConfig } from './config';
export {
  DEFAULT_SENDING_WINDOW,
  leadLocation,
  nextSendTime,
  proactiveHold,
  type Hold,
} from './sequences/sending-window';
export {
  composeSystemPrompt,
  contextLimits,
  loadPromptInput,
  MAX_REPLY_CHARS,
  type ChecklistEntry,
  type PromptInput,
} from './ai/prompt';
export { checklistProgress } from './leads/checklist';
export { normalizePhone } from './http/phone';
export { findConversationRow, findLeadRow } from './leads/queries';
export { fetchPage } from './ai/pages';
export { pageFetchEvents } from './ai/routes';
