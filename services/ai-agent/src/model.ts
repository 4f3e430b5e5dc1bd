import { MAX_REPLY_CHARS } from '@leadline/domain';
import { modelRequestSeconds } from '@leadline/runtime';
import OpenAI from 'openai';
import type {
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { offlineSummary } from './offline';
import { createToolbox, toolDefinitionsFor } from './tools';
import type { Responder, TurnInput } from './turn';

/** Tool rounds in one turn before the agent stops asking (a model looping on tools). */
const MAX_TOOL_ROUNDS = 5;
/** Characters of a PDF's text given to the model. */
const PDF_TEXT_CHARS = 8_000;

/** Cuts a reply to the SMS bound, at a word boundary where there is one. */
export function boundReply(text: string | null | undefined): string | null {
  const trimmed = (text ?? '').trim();
  if (!trimmed) return null;
  if (trimmed.length <= MAX_REPLY_CHARS) return trimmed;
  const cut = trimmed.slice(0, MAX_REPLY_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > MAX_REPLY_CHARS / 2 ? cut.slice(0, space) : cut}…`;
}

function currentTurn(input: TurnInput): ChatCompletionMessageParam[] {
  if (input.instructions !== null) {
    return [
      {
        role: 'system',
        content: `Write the next message of a follow-up sequence to this lead, following these instructions: ${input.instructions}`,
      },
    ];
  }
  const parts: ChatCompletionContentPart[] = [
    { type: 'text', text: input.burst.map((message) => message.body).join('\n') || '(no text)' },
  ];
  for (const attachment of input.attachments) {
    parts.push({
      type: 'text',
      text: `[Attachment ${attachment.number}: ${attachment.content_type}, ${attachment.file_size} bytes]`,
    });
    if (attachment.bytes && attachment.content_type.startsWith('image/')) {
      parts.push({
        type: 'image_url',
        image_url: { url: `data:${attachment.content_type};base64,${attachment.bytes.toString('base64')}` },
      });
    } else if (attachment.text) {
      parts.push({
        type: 'text',
        text: `[Text of attachment ${attachment.number}]\n${attachment.text.slice(0, PDF_TEXT_CHARS)}`,
      });
    }
  }
  return [{ role: 'user', content: parts }];
}

/**
 * The model through Chat Completions with function tools, so any OpenAI-compatible server works.
 * The SDK's own retries are off: the agent retries whole turns with its own backoff and bound.
 */
export function createModelResponder(options: {
  apiKey: string;
  baseURL?: string | undefined;
  model: string;
  timeoutMs: number;
}): Responder {
  const client = new OpenAI({
    apiKey: options.apiKey,
    ...(options.baseURL && { baseURL: options.baseURL }),
    maxRetries: 0,
    timeout: options.timeoutMs,
  });
  return {
    name: 'model',
    async respond(input, signal) {
      const toolbox = createToolbox(input);
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: input.systemPrompt },
        ...input.history.map((message): ChatCompletionMessageParam =>
          message.direction === 'inbound'
            ? { role: 'user', content: message.body }
            : { role: 'assistant', content: message.body },
        ),
        ...currentTurn(input),
      ];
      const tools = toolDefinitionsFor(input);
      let reply: string | null = null;
      for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
        const timer = modelRequestSeconds.startTimer();
        const completion = await client.chat.completions
          .create({ model: options.model, messages, tools }, { signal })
          .then(
            (answer) => (timer({ outcome: 'ok' }), answer),
            (error: unknown) => {
              timer({ outcome: 'error' });
              throw error;
            },
          );
        const message = completion.choices[0]?.message;
        if (!message) break;
        const calls = (message.tool_calls ?? []).filter((call) => call.type === 'function');
        if (calls.length === 0) {
          reply = message.content;
          break;
        }
        messages.push({ role: 'assistant', content: message.content, tool_calls: calls });
        for (const call of calls) {
          messages.push({
            role: 'tool',
            tool_call_id: call.id,
            content: toolbox.execute(call.function.name, call.function.arguments),
          });
        }
        // An opt-out ends the turn: whatever the model would write next is not sent.
        if (toolbox.optOut() !== null) break;
      }
      const collected = toolbox.collected();
      const handoff = toolbox.handoff();
      return {
        reply: boundReply(reply),
        collected,
        handoff,
        optOut: toolbox.optOut(),
        summary: toolbox.summary() ?? offlineSummary(input, collected, handoff),
      };
    },
  };
}
