import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createToolbox, toolDefinitions, toolDefinitionsFor, tools, type ToolName } from './tools';
import type { Attachment } from './turn';

const checklist = [
  {
    requirement_id: 'r-email',
    name: 'Email',
    type: 'email',
    description: null,
    required: true,
    collected: null,
  },
  {
    requirement_id: 'r-id',
    name: 'Photo ID',
    type: 'document',
    description: null,
    required: true,
    collected: null,
  },
] as const;
const attachment: Attachment = {
  number: 1,
  message_id: 'm-1',
  document_id: 'd-1',
  content_type: 'image/jpeg',
  file_size: 1234,
  text: null,
  bytes: null,
};
const burst = [{ message_id: 'm-1', body: 'here is my ID' }];
const toolbox = () => createToolbox({ checklist, attachments: [attachment], burst });
const call = (name: string, args: unknown) => {
  const box = toolbox();
  return { answer: box.execute(name, JSON.stringify(args)), box };
};

describe('the JSON Schemas the model is offered', () => {
  it('are those of the zod schemas that parse the arguments, one per tool', () => {
    expect(toolDefinitions.map((definition) => definition.function.name)).toEqual(Object.keys(tools));
    for (const { function: offered } of toolDefinitions) {
      const { $schema, ...schema } = z.toJSONSchema(tools[offered.name as ToolName].parameters);
      expect($schema).toMatch(/json-schema\.org/);
      expect(offered.parameters).toEqual(schema);
      expect(offered.description).toBe(tools[offered.name as ToolName].description);
    }
  });

  it('name every argument, require each, and allow no other', () => {
    expect(toolDefinitions.find((tool) => tool.function.name === 'record_checklist_document')).toEqual({
      type: 'function',
      function: {
        name: 'record_checklist_document',
        description: expect.any(String),
        parameters: {
          type: 'object',
          properties: {
            requirement: { type: 'string', description: 'The document item name, exactly as listed.' },
            attachment: {
              type: 'integer',
              minimum: 1,
              maximum: Number.MAX_SAFE_INTEGER,
              description: 'The attachment number, from 1.',
            },
          },
          required: ['requirement', 'attachment'],
          additionalProperties: false,
        },
      },
    });
  });
});

describe('tool call arguments', () => {
  it('are recorded when the schema parses them; keys it does not name are dropped', () => {
    const value = call('record_checklist_value', {
      requirement: 'email',
      value: 'ana@example.com',
      phone: '+15125550399',
    });
    expect(value.answer).toBe('Recorded Email: ana@example.com');
    expect(value.box.collected()).toEqual([
      { requirement_id: 'r-email', value: 'ana@example.com', attachment: null },
    ]);
    const document = call('record_checklist_document', { requirement: 'Photo ID', attachment: 1 });
    expect(document.answer).toBe('Recorded attachment 1 as Photo ID.');
    expect(document.box.collected()).toEqual([{ requirement_id: 'r-id', value: null, attachment }]);
    const summary = call('update_summary', { summary: '  Ana sent her email.  ' });
    expect(summary.box.summary()).toBe('Ana sent her email.');
  });

  it.each([
    ['record_checklist_value', { requirement: 'Email', value: 42 }, /value: Invalid input: expected string/],
    ['record_checklist_value', { value: 'ana@example.com' }, /requirement: Invalid input/],
    ['record_checklist_document', { requirement: 'Photo ID', attachment: '1' }, /attachment: Invalid input/],
    ['record_checklist_document', { requirement: 'Photo ID', attachment: 0 }, /attachment: Too small/],
    ['record_checklist_document', { requirement: 'Photo ID', attachment: 1.5 }, /attachment: /],
    ['update_summary', { summary: ['a'] }, /summary: Invalid input/],
    ['record_checklist_value', null, /arguments: Invalid input: expected object/],
  ])('%s(%j) is refused to the model, naming what is wrong, and records nothing', (name, args, problem) => {
    const { answer, box } = call(name, args);
    expect(answer).toMatch(/^ERROR: The arguments are not valid: /);
    expect(answer).toMatch(problem);
    expect(answer).toMatch(/Nothing was recorded\.$/);
    expect(box.collected()).toEqual([]);
    expect(box.summary()).toBeNull();
  });

  it('are refused when they are not JSON, or name no tool', () => {
    expect(toolbox().execute('record_checklist_value', '{"requirement":')).toBe(
      'ERROR: The arguments are not valid JSON. Nothing was recorded.',
    );
    expect(call('read_lead', { phone: '+15125550399' }).answer).toBe(
      'ERROR: Unknown tool read_lead. Nothing was recorded.',
    );
    expect(call('toString', {}).answer).toBe('ERROR: Unknown tool toString. Nothing was recorded.');
  });

  it('of a handoff never keep a lead from a person: without a usable reason it is handed off all the same', () => {
    expect(call('request_handoff', { reason: '  Wants to talk to Dana  ' }).box.handoff()).toBe(
      'Wants to talk to Dana',
    );
    for (const args of [{}, { reason: 7 }, { reason: '  ' }, null]) {
      const { answer, box } = call('request_handoff', args);
      expect(answer).toBe('A person from the team will take over this conversation.');
      expect(box.handoff()).toBe('requested_by_ai');
    }
  });

  it('of an opt-out never keep a lead from being left alone: without a usable reason it is recorded all the same', () => {
    expect(call('record_opt_out', { reason: ' Said "I am done with you people" ' }).box.optOut()).toBe(
      'Said "I am done with you people"',
    );
    for (const args of [{}, { reason: 7 }, { reason: '  ' }, null]) {
      const { answer, box } = call('record_opt_out', args);
      expect(answer).toMatch(/opted out/);
      expect(box.optOut()).toBe('requested_by_lead');
    }
  });
});

describe('the opt-out tool', () => {
  it('is offered in answer to the lead, not for a sequence step, and refused there if called', () => {
    const names = (definitions: typeof toolDefinitions) => definitions.map((tool) => tool.function.name);
    expect(names(toolDefinitionsFor({ burst }))).toContain('record_opt_out');
    expect(names(toolDefinitionsFor({ burst: [] }))).not.toContain('record_opt_out');
    const step = createToolbox({ checklist, attachments: [], burst: [] });
    expect(step.execute('record_opt_out', '{"reason":"x"}')).toMatch(/^ERROR: /);
    expect(step.optOut()).toBeNull();
  });
});
