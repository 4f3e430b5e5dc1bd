import { composeSystemPrompt } from '@leadline/domain';
import { promptInputSelections, toPromptInput } from '@leadline/decision-state';
import type { TopicNames } from '@leadline/events';
import type { Clock, Database, DocumentStore, NewId, ProjectionProgress } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import { loadAttachments } from './media';
import type { TurnInput } from './turn';
import type { PendingMessage, TurnRow } from './turns';

/** Earlier messages the model sees beside the burst it answers. */
const HISTORY_MESSAGES = 30;
/** How long the pre-check waits for the projector to pass the burst on the log. */
const PROJECTED_WAIT_MS = 2_000;

export interface TurnInputDeps {
  db: Kysely<Database>;
  documents: DocumentStore;
  clock: Clock;
  newId: NewId;
  allowPrivateTargets: boolean;
  twilio?: { accountSid: string; authToken: string } | undefined;
  onError: (error: unknown) => void;
}

/**
 * What the model works on: the composed system prompt, the lead, the conversation's history, the burst
 * and its attachments (downloaded and stored), the checklist and a step's instructions.
 */
export async function buildInput(
  deps: TurnInputDeps,
  turn: TurnRow,
  account: { id: string; company_name: string },
  messages: readonly PendingMessage[],
): Promise<TurnInput> {
  const { db, clock, onError } = deps;
  const burstIds = messages.map((message) => message.message_id);
  // Two independent reads side by side: the prompt's input, the lead and the history in one statement,
  // and the media.
  const [reads, attachments] = await Promise.all([
    db
      .selectNoFrom((eb) => [
        ...promptInputSelections(eb, account.id, turn.phone),
        jsonArrayFrom(
          eb
            .selectFrom('messages')
            .select(['id', 'direction', 'body'])
            .where('account_id', '=', account.id)
            .where('phone', '=', turn.phone)
            // What the account's retention expired is gone for the model too (an empty turn tells it nothing).
            .where('content_expired', '=', false)
            .$if(burstIds.length > 0, (query) => query.where('id', 'not in', burstIds))
            .orderBy('sent_at', 'desc')
            .orderBy('id', 'desc')
            .limit(HISTORY_MESSAGES),
        ).as('history'),
      ])
      .executeTakeFirstOrThrow(),
    loadAttachments(
      {
        db,
        documents: deps.documents,
        clock,
        newId: deps.newId,
        allowPrivateTargets: deps.allowPrivateTargets,
        twilio: deps.twilio,
      },
      account,
      messages,
      onError,
    ),
  ]);
  const { input: promptInput, lead } = toPromptInput(account, reads);
  return {
    systemPrompt: composeSystemPrompt(promptInput),
    company: account.company_name,
    leadFirstName: lead?.first_name ?? lead?.name?.split(' ')[0] ?? null,
    history: reads.history.reverse().map((message) => ({ direction: message.direction, body: message.body })),
    burst: messages.map((message) => ({ message_id: message.message_id, body: message.body })),
    attachments,
    checklist: promptInput.checklist,
    instructions: turn.step?.instructions ?? null,
  };
}

/**
 * The pre-check reads read models that may not have caught up with the burst yet: it would read "no
 * such lead" for a new number and the model would not be asked, costing the turn a command under the
 * account's lock only to find the read models behind, and then a second one. So it first waits until
 * the projector announces it has passed the burst's last message on the log (briefly, and bounded:
 * past the bound the command decides). Messages queued without their place on the log are not waited for.
 */
export async function burstProjected(
  deps: { progress: ProjectionProgress; topics: TopicNames },
  messages: readonly PendingMessage[],
) {
  let partition: number | undefined;
  let nextOffset = 0n;
  for (const message of messages) {
    if (message.log_partition === null || message.log_next_offset === null) continue;
    partition = message.log_partition;
    const after = BigInt(message.log_next_offset);
    if (after > nextOffset) nextOffset = after;
  }
  if (partition === undefined) return;
  await deps.progress.waitFor(deps.topics.account, partition, nextOffset, PROJECTED_WAIT_MS);
}
