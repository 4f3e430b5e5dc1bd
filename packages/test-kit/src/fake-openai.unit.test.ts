import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeOpenAi } from './fake-openai';

describe('the fake Chat Completions server, through the real openai client', () => {
  let fake: FakeOpenAi;
  let client: OpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
    client = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.baseUrl, maxRetries: 0 });
  });
  afterAll(() => fake.close());

  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'record_checklist_value',
        parameters: {
          type: 'object',
          properties: { requirement: { type: 'string' }, value: { type: 'string' } },
        },
      },
    },
  ];

  it('answers scripted tool calls, then the scripted text, and records what it was sent', async () => {
    fake.script(
      {
        toolCalls: [{ name: 'record_checklist_value', arguments: { requirement: 'Email', value: 'a@b.co' } }],
      },
      { text: 'Thanks!' },
    );
    const first = await client.chat.completions.create({
      model: 'test-model',
      messages: [{ role: 'user', content: 'my email is a@b.co' }],
      tools,
    });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({
      requirement: 'Email',
      value: 'a@b.co',
    });
    const second = await client.chat.completions.create({
      model: 'test-model',
      messages: [
        { role: 'user', content: 'my email is a@b.co' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: 'recorded' },
      ],
    });
    expect(second.choices[0]!.message.content).toBe('Thanks!');
    expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'recorded' });
  });

  it('answers errors as OpenAI does, and slow answers lose to the client timeout', async () => {
    fake.script({ error: { status: 429, retryAfter: 1 } });
    await expect(
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    fake.script({ delayMs: 5_000, text: 'late' });
    await expect(
      client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
        { timeout: 100 },
      ),
    ).rejects.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
  });

  it('refuses a wrong key', async () => {
    const stranger = new OpenAI({ apiKey: 'sk-wrong', baseURL: fake.baseUrl, maxRetries: 0 });
    await expect(
      stranger.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
