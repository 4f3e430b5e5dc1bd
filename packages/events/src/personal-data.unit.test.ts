import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { eventCatalog, type DomainEvent } from './catalog';
import { clearFieldNames, clearFieldsByEvent, mapPersonalData, personalDataScopes } from './personal-data';

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
};

/** Every leaf of `data` that can hold text (strings, and free-form values), as `a.b`, `a[].b`, `a.*`. */
function textLeaves(schema: JsonSchema, path: string, out: Set<string>) {
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return options.forEach((option) => textLeaves(option, path, out));
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const at = (name: string) => (path ? `${path}.${name}` : name);
  if (schema.properties || types.includes('object')) {
    for (const [name, property] of Object.entries(schema.properties ?? {}))
      textLeaves(property, at(name), out);
    if (typeof schema.additionalProperties === 'object')
      textLeaves(schema.additionalProperties, at('*'), out);
    return;
  }
  if (types.includes('array') && schema.items) return textLeaves(schema.items, `${path}[]`, out);
  const freeForm = schema.type === undefined && !schema.enum && schema.const === undefined;
  if (freeForm || (types.includes('string') && !schema.enum && schema.const === undefined)) out.add(path);
}

const personalPaths = (type: DomainEvent['type']) =>
  (personalDataScopes[type] ?? []).flatMap((scope) =>
    scope.fields.map(
      (field) => `${scope.at.replace(/^data\.?/, '')}${scope.at === 'data' ? '' : '.'}${field}`,
    ),
  );

describe('personal data on the log', () => {
  it.each(eventCatalog.map((definition) => [definition.type, definition] as const))(
    "every text field of %s is sealed as its subject's or reviewed as clear",
    (type, definition) => {
      const schema = z.toJSONSchema(definition.schema, { target: 'draft-7' }) as JsonSchema;
      const leaves = new Set<string>();
      textLeaves(schema.properties!.data!, '', leaves);
      const personal = new Set(personalPaths(type));
      const clearHere = new Set(clearFieldsByEvent[type] ?? []);
      const unreviewed = [...leaves].filter((leaf) => {
        const name = leaf.split('.').at(-1)!.replace('[]', '');
        return !personal.has(leaf) && !clearHere.has(leaf) && !clearFieldNames.has(name);
      });
      expect(unreviewed).toEqual([]);
      // A listed field that does not exist is a typo that would leave the real one clear.
      for (const path of personal) expect(leaves.has(path), path).toBe(true);
    },
  );

  it('expires only personal fields of the conversation, never who the person is', () => {
    for (const [type, scopes] of Object.entries(personalDataScopes)) {
      for (const scope of scopes ?? []) {
        // An expiring field outside `fields` would be written in clear; the subject stays for good.
        for (const field of scope.expiring ?? []) expect(scope.fields, `${type} ${field}`).toContain(field);
        expect(scope.expiring ?? [], type).not.toContain(scope.subject.field);
      }
    }
    const expiring = (type: DomainEvent['type']) =>
      personalDataScopes[type]?.flatMap((s) => s.expiring ?? []);
    expect(expiring('message.received')).toEqual(['body', 'media[].url']);
    expect(expiring('checklist.item_collected')).toEqual(['value']);
    expect(expiring('lead.created')).toEqual([]);
  });

  it('tells the mapper which values expire', () => {
    const event = {
      type: 'conversation.reply_received',
      data: { phone: '+15550000001', lead_name: 'Ana', message_body: 'hello' },
    } as unknown as DomainEvent;
    const mapped = mapPersonalData(
      event,
      () => (value, site) => `${String(value)}:${site.expiring}`,
    ) as unknown as {
      data: Record<string, unknown>;
    };
    expect(mapped.data).toMatchObject({
      phone: '+15550000001:false',
      lead_name: 'Ana:false',
      message_body: 'hello:true',
    });
  });

  it('maps the personal values of each scope, copying what it changes and leaving nulls', () => {
    const event = {
      type: 'sequence.leads_enrolled',
      data: {
        sequence_id: 'seq_1',
        enrollments: [
          { enrollment_id: 'e1', lead_id: 'l1', phone: '+15550000001', next_step_at: null },
          { enrollment_id: 'e2', lead_id: 'l2', phone: '+15550000002', next_step_at: null },
        ],
      },
    } as unknown as DomainEvent;
    const subjects: unknown[] = [];
    const mapped = mapPersonalData(event, (subject) => {
      subjects.push(subject.value);
      return (value, site) => `${site.path}=${String(value)}`;
    }) as unknown as { data: { enrollments: { phone: string; lead_id: string }[] } };
    expect(subjects).toEqual(['+15550000001', '+15550000002']);
    expect(mapped.data.enrollments.map((enrollment) => enrollment.phone)).toEqual([
      'data.enrollments[].phone=+15550000001',
      'data.enrollments[].phone=+15550000002',
    ]);
    expect(mapped.data.enrollments[0]!.lead_id).toBe('l1');
    expect((event as unknown as typeof mapped).data.enrollments[0]!.phone).toBe('+15550000001');
  });

  it('reaches every value of free-form metadata and leaves null fields null', () => {
    const event = {
      type: 'lead.created',
      data: { phone: '+15550000001', name: null, email: 'a@b.co', metadata: { loan: 250000, note: 'x' } },
    } as unknown as DomainEvent;
    const mapped = mapPersonalData(event, () => (value) => ['sealed', value]) as unknown as {
      data: Record<string, unknown>;
    };
    expect(mapped.data).toEqual({
      phone: ['sealed', '+15550000001'],
      name: null,
      email: ['sealed', 'a@b.co'],
      metadata: { loan: ['sealed', 250000], note: ['sealed', 'x'] },
    });
  });
});
