import { z } from 'zod';
import { accountParams } from '../accounts/schemas';
import { count, idParam, timestamp, uuid } from '../http/fields';

/** Spec §8: context files are at most 100 KB. */
export const MAX_CONTEXT_FILE_BYTES = 100 * 1024;

const guidedField = (description: string) => z.string().max(4000).nullable().optional().describe(description);

export const promptSettingsBody = z
  .discriminatedUnion('mode', [
    z
      .strictObject({
        mode: z.literal('guided'),
        role_persona: guidedField('Who the AI is, e.g. "Maya, the loan assistant of {{company}}".'),
        tone_voice: guidedField('How it sounds.'),
        response_style: guidedField('How it writes (length, structure).'),
        conversation_rules: guidedField('What it must and must not do.'),
        special_instructions: guidedField('Anything else.'),
      })
      .meta({ id: 'GuidedPromptSettings', description: 'The prompt composed from its parts.' }),
    z
      .strictObject({
        mode: z.literal('advanced'),
        system_prompt: z.string().min(1).max(20_000).describe('Replaces the guided composition entirely.'),
      })
      .meta({ id: 'AdvancedPromptSettings', description: 'A system prompt of your own.' }),
  ])
  .meta({ id: 'PromptSettingsUpdate' });

export const promptSettingsResponse = z
  .object({
    mode: z.enum(['guided', 'advanced']),
    role_persona: z.string().nullable(),
    tone_voice: z.string().nullable(),
    response_style: z.string().nullable(),
    conversation_rules: z.string().nullable(),
    special_instructions: z.string().nullable(),
    system_prompt: z.string().nullable().describe('The advanced prompt; null in guided mode.'),
    composed_system_prompt: z
      .string()
      .describe(
        'The system prompt exactly as the model sees it: the guided composition or the advanced prompt, then the channel rules and tools, the checklist, the company context and the lead (of `phone` when given).',
      ),
    updated_at: timestamp().nullable().describe('Null until the settings are first saved (defaults apply).'),
  })
  .meta({ id: 'PromptSettings' });

export const promptQuery = z.object({
  phone: z
    .string()
    .max(32)
    .optional()
    .describe("Compose the prompt for this lead's checklist and fields, as the model sees it for them."),
});

export const contextFileResponse = z
  .object({
    id: uuid(),
    name: z.string(),
    file_type: z.enum(['txt', 'md']),
    file_size: count().max(MAX_CONTEXT_FILE_BYTES).describe('Bytes.'),
    created_at: timestamp(),
  })
  .meta({ id: 'ContextFile' });

/** The upload, as documented: one multipart part `file` (read from the stream, not parsed as a body). */
export const contextFileUpload = z
  .strictObject({
    file: z
      .file()
      .max(MAX_CONTEXT_FILE_BYTES)
      .meta({
        maxLength: MAX_CONTEXT_FILE_BYTES,
        // The part's own headers, as the server reads them: the file name's extension decides.
        'x-encoding': {
          contentType: 'text/plain, text/markdown',
          headers: {
            'Content-Disposition': {
              description:
                'Names the part `file` and gives a file name ending in `.txt` or `.md` (any case).',
              required: true,
              schema: {
                type: 'string',
                maxLength: 1024,
                pattern: '^form-data; *name="file"; *filename="[^"]*\\.([Tt][Xx][Tt]|[Mm][Dd])"$',
              },
            },
          },
        },
      })
      .describe('The `.txt` or `.md` file: UTF-8 text, at most 100 KB. Its name gives the extension.'),
  })
  .meta({ id: 'ContextFileUpload' });

export const contextFileListResponse = z
  .object({ files: z.array(contextFileResponse).max(20) })
  .meta({ id: 'ContextFileList' });

export const contextUrlBody = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .describe('An http or https page.'),
  })
  .meta({ id: 'ContextUrlCreate' });

export const contextUrlResponse = z
  .object({
    id: uuid(),
    url: z.url(),
    title: z.string().nullable(),
    last_scraped_at: timestamp()
      .nullable()
      .describe('When the content last changed or was confirmed unchanged.'),
    status: z
      .enum(['ok', 'failing'])
      .describe('`failing`: the last fetch failed; the last good content is still used.'),
    last_error: z.string().nullable(),
    content_length: count().describe('Characters of extracted text used as context.'),
  })
  .meta({ id: 'ContextUrl' });

export const contextUrlListResponse = z
  .object({ urls: z.array(contextUrlResponse).max(20) })
  .meta({ id: 'ContextUrlList' });

export const contextFileParams = accountParams.extend({ file_id: idParam('The context file id.') });
export const contextUrlParams = accountParams.extend({ url_id: idParam('The context URL id.') });
export { deletedResponse as contextDeletedResponse } from '../leads/schemas';
