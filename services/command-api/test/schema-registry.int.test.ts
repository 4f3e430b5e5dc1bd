import { SchemaType } from '@kafkajs/confluent-schema-registry';
import {
  createEventCodec,
  createSchemaRegistry,
  eventCatalog,
  jsonSchemaOf,
  subjectOf,
  topicNames,
} from '@leadline/events';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment();
});
afterAll(() => env?.dispose());

describe('the schemas on the registry', () => {
  it('are titled with their event type, a BACKWARD-compatible new version of the untitled ones', async () => {
    const registry = createSchemaRegistry(env.config.SCHEMA_REGISTRY_URL);
    const topics = topicNames(env.config.TOPIC_PREFIX);
    const subjectUrl = (subject: string) =>
      `${env.config.SCHEMA_REGISTRY_URL}/subjects/${encodeURIComponent(subject)}`;

    // The registry as earlier releases left it: untitled schemas under BACKWARD compatibility.
    for (const definition of eventCatalog) {
      const { title: _title, ...untitled } = JSON.parse(jsonSchemaOf(definition));
      await registry.register(
        { type: SchemaType.JSON, schema: JSON.stringify(untitled) },
        { subject: subjectOf(topics[definition.topic], definition.type) },
      );
    }

    // Starting a service registers the titled versions; an incompatible one would be refused here.
    await createEventCodec(registry, topics);

    for (const definition of eventCatalog) {
      // What TopicRecordNameStrategy computes from the schema: `<topic>-<title>`.
      const latest = await fetch(
        `${subjectUrl(subjectOf(topics[definition.topic], definition.type))}/versions/latest`,
      );
      expect(latest.status).toBe(200);
      const { schema, version } = (await latest.json()) as { schema: string; version: number };
      const { title } = JSON.parse(schema) as { title: string };
      expect(title).toBe(definition.type);
      expect(`${topics[definition.topic]}-${title}`).toBe(
        subjectOf(topics[definition.topic], definition.type),
      );
      expect(version).toBe(2);
      const config = await fetch(
        `${env.config.SCHEMA_REGISTRY_URL}/config/${encodeURIComponent(subjectOf(topics[definition.topic], definition.type))}`,
      );
      expect(((await config.json()) as { compatibilityLevel: string }).compatibilityLevel).toBe('BACKWARD');
    }

    // And the check is real: a new required field (old records would not read) is refused.
    const [definition] = eventCatalog;
    const titled = JSON.parse(jsonSchemaOf(definition!));
    const breaking = {
      ...titled,
      properties: { ...titled.properties, extra: { type: 'string' } },
      required: [...titled.required, 'extra'],
    };
    await expect(
      registry.register(
        { type: SchemaType.JSON, schema: JSON.stringify(breaking) },
        { subject: subjectOf(topics[definition!.topic], definition!.type) },
      ),
    ).rejects.toMatchObject({ status: 409 });
  });
});
