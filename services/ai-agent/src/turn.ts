import type { ChecklistEntry } from '@leadline/command-api';

/** An attachment of the inbound burst, numbered from 1 in arrival order (the tool contract). */
export interface Attachment {
  number: number;
  message_id: string;
  document_id: string;
  content_type: string;
  file_size: number;
  /** Extracted text of a PDF (for the model and for matching). */
  text: string | null;
  /** Bytes of an image, for the model's image input. */
  bytes: Buffer | null;
}

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

export interface CollectedItem {
  requirement_id: string;
  value: string | null;
  attachment: Attachment | null;
}

/** What a responder proposes; the decider checks it against the state under the account's lock. */
export interface TurnProposal {
  reply: string | null;
  collected: CollectedItem[];
  handoff: string | null;
  summary: string;
}

export interface Responder {
  /** `model` or `offline`, recorded on ai.turn_completed. */
  readonly name: string;
  respond(input: TurnInput, signal: AbortSignal): Promise<TurnProposal>;
}
