import { describe, expect, it } from 'vitest';
import { eventCatalog } from './catalog';
import { jsonSchemaOf, subjectOf } from './codec';

describe('the event catalog', () => {
  it('names every event type once, in past-tense dotted form', () => {
    const types = eventCatalog.map((definition) => definition.type);
    expect(new Set(types).size).toBe(types.length);
    for (const type of types) expect(type).toMatch(/^[a-z_]+\.[a-z_]+$/);
  });

  it.each(eventCatalog.map((definition) => [definition.type, definition] as const))(
    '%s has a draft-07 JSON Schema titled with its type, with the whole envelope required',
    (_type, definition) => {
      const schema = JSON.parse(jsonSchemaOf(definition));
      expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
      // TopicRecordNameStrategy's subject is `<topic>-<title>`: exactly our subject for the type.
      expect(schema.title).toBe(definition.type);
      expect(subjectOf('leadline.account-events', schema.title)).toBe(
        `leadline.account-events-${definition.type}`,
      );
      expect(schema.required).toEqual(
        expect.arrayContaining([
          'id',
          'type',
          'version',
          'account_id',
          'partner_id',
          'occurred_at',
          'actor',
          'data',
        ]),
      );
      expect(schema.properties.type.const).toBe(definition.type);
    },
  );
});
