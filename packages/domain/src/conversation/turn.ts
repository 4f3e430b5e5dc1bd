/** What a responder (the model, or the offline stand-in) proposes for one turn, and what it works on. */

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
  /**
   * The lead asked not to be contacted any more in words the rules did not recognise, as the model
   * judged (its reason); null otherwise. The turn then records the opt-out and nothing else.
   */
  optOut: string | null;
  summary: string;
}
