import type { Attachment, ChecklistEntry, TurnProposal } from '@leadline/domain';

export type { Attachment, CollectedItem, TurnProposal } from '@leadline/domain';

export interface TurnInput {
  systemPrompt: string;
  company: string;
  leadFirstName: string | null;
  /** Earlier messages, oldest first. */
  history: { direction: 'inbound' | 'outbound'; body: string }[];
  /** The inbound burst being answered (empty for a sequence step). */
  burst: { message_id: string; body: string }[];
  attachments: Attachment[];
  checklist: readonly ChecklistEntry[];
  /** A sequence step's instructions: write that message rather than answer. */
  instructions: string | null;
}

export interface Responder {
  /** `model` or `offline`, recorded on ai.turn_completed. */
  readonly name: string;
  respond(input: TurnInput, signal: AbortSignal): Promise<TurnProposal>;
}
