import type { NewEvent } from '@leadline/events';
import { evolveLead } from '../lead/evolve';
import type { ConversationState } from './decide';

/** A conversation as decisions see it: the conversation with one number, keyed by the lead's phone. */
export type Conversation = NonNullable<ConversationState['conversation']>;

/** A conversation seen for the first time: nothing sent or received started it yet. */
export const newConversation: Conversation = {
  started: false,
  opted_out: false,
  needs_handoff: false,
  ai_paused_until: null,
};

/**
 * What an event changes in the conversation with its `data.phone`, or undefined when it is not about a
 * conversation. The projector writes these same changes to `conversations`, and a decision that
 * decides several messages at once applies them to its state between them (`evolveConversation`), so
 * the two never disagree on what an event does.
 */
export function conversationChange(event: NewEvent): Partial<Conversation> | undefined {
  switch (event.type) {
    case 'conversation.started':
      return { started: true };
    // A message makes the conversation exist, started or not.
    case 'message.received':
    case 'message.outbound_requested':
      return {};
    case 'lead.opted_out':
      return { opted_out: true };
    case 'lead.opted_in':
      return { opted_out: false };
    case 'conversation.handoff_requested':
      return { needs_handoff: true };
    case 'conversation.handoff_cleared':
      return { needs_handoff: false };
    case 'conversation.ai_paused':
      return { ai_paused_until: new Date(event.data.paused_until) };
    case 'conversation.ai_resumed':
      return { ai_paused_until: null };
    default:
      return undefined;
  }
}

export function evolveConversation(
  conversation: Conversation | undefined,
  event: NewEvent,
): Conversation | undefined {
  const change = conversationChange(event);
  return change ? { ...(conversation ?? newConversation), ...change } : conversation;
}

/**
 * The state a conversation decider reads, after `event` (an event about its number) at `at`. The
 * account is the decision's own and does not change within it.
 */
export function evolveConversationState(
  state: ConversationState,
  event: NewEvent,
  at: Date,
): ConversationState {
  return {
    ...state,
    conversation: evolveConversation(state.conversation, event),
    lead: evolveLead(state.lead, event, at),
  };
}
