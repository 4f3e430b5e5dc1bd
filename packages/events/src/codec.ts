import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { z } from 'zod';
import { eventCatalog, eventDefinitionsByType, type DomainEvent } from './catalog';
import type { EventDefinition } from './define';
import { findUnstorableText, UnstorableTextError } from './text';
import type { TopicNames } from './topics';

export interface EventCodec {
  encode(event: DomainEvent): Promise<Buffer>;
  decode(record: Buffer, options?: DecodeOptions): Promise<DomainEvent>;
}

export interface DecodeOptions {
  /**
   * Whether the reader reads personal values of events of a type (all of them, by default). Those of
   * a type it does not are left as the sealed strings on the log: never decrypted, no key looked up,
   * and no use to a reader that would read them after all.
   */
  opens?: (eventType: DomainEvent['type']) => boolean;
}

export class UnknownEventTypeError extends Error {}

/**
 * Seals an event's personal data on its way to the log and opens it on the way back (see
 * personal-data.ts for which values, and the runtime for the keys). Without one the codec writes and
 * reads every value as it is: for tools that must see the log exactly as stored.
 */
export interface PersonalDataSealer {
  seal(event: DomainEvent): Promise<DomainEvent>;
  open(event: DomainEvent): Promise<DomainEvent>;
}

/**
 * The JSON Schema registered for an event type: draft-07, which every registry and validator reads.
 * `format` keywords are left out: strict validators (Ajv's default, used by the registry clients)
 * refuse unknown formats, and every formatted string also carries the equivalent `pattern`.
 * The `title` is the event type: Confluent's TopicRecordNameStrategy names a JSON Schema's subject
 * `<topic>-<title>`, so stock serializers, ksqlDB, Connect and Flink find our subjects by it. A title
 * is an annotation, so adding it to a registered schema is a BACKWARD-compatible new version.
 */
export function jsonSchemaOf(definition: Pick<EventDefinition, 'type' | 'schema'>): string {
  const { $schema, ...schema } = z.toJSONSchema(definition.schema, {
    target: 'draft-7',
    override: ({ jsonSchema }) => {
      delete jsonSchema.format;
    },
  });
  return JSON.stringify({ $schema, title: definition.type, ...schema });
}

/** Subject per record type (TopicRecordNameStrategy): `<topic>-<title>`, the title being the event type. */
export function subjectOf(topic: string, eventType: string): string {
  return `${topic}-${eventType}`;
}

/** How long one registry request may take before it is given up and tried again. */
export const REGISTRY_REQUEST_TIMEOUT_MS = 10_000;

/**
 * The registry client, with a bound on each request. The client sets none: a registry that accepts a
 * request and never answers would hang a process's start-up (registering the schemas) or a consumer's
 * partition (looking up a writer's schema) for good. A request past the bound is tried again like one
 * the registry answered with a 5xx (the client's retries: 3, backing off from 100 ms). Every request
 * the client makes is safe to repeat: lookups, the subject's compatibility setting, and registrations
 * (registering a schema again returns the id it already has).
 */
export function createSchemaRegistry(
  host: string,
  { requestTimeoutMs = REGISTRY_REQUEST_TIMEOUT_MS } = {},
): SchemaRegistry {
  return new SchemaRegistry({
    host,
    middlewares: [
      () => ({
        prepareRequest: async (next) => (await next()).enhance({ timeout: requestTimeoutMs }),
      }),
    ],
    retry: {
      // The client retries only GETs by default; a registration is as safe to repeat.
      enableRetry: () => true,
      validateRetry: (response) =>
        response.responseStatus >= 500 || response.error()?.name === 'TimeoutError',
    },
  });
}

/**
 * Registers a schema, tolerating another process that registers the same subject at the same moment:
 * the client sets the subject's compatibility after a first registration, and of two processes doing
 * so at once one is refused; its retry finds the subject configured and just registers.
 */
async function registerOnce(
  registry: SchemaRegistry,
  schema: { type: SchemaType.JSON; schema: string },
  subject: string,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await registry.register(schema, { subject })).id;
    } catch (error) {
      if (attempt >= 3 || (error as { status?: number }).status !== 409) throw error;
    }
  }
}

/**
 * Confluent wire format (magic byte, 4-byte schema id, JSON) with one registered JSON Schema per event
 * type, BACKWARD compatibility enforced by the registry. Decoding looks the schema up by the id in the
 * record, so any Confluent-compatible consumer can replay the log; we then parse with zod for types.
 */
export async function createEventCodec(
  registry: SchemaRegistry,
  topics: TopicNames,
  sealer?: PersonalDataSealer,
): Promise<EventCodec> {
  const schemaIds = new Map<string, number>();
  for (const definition of eventCatalog) {
    const schema = { type: SchemaType.JSON as const, schema: jsonSchemaOf(definition) };
    const subject = subjectOf(topics[definition.topic], definition.type);
    schemaIds.set(definition.type, await registerOnce(registry, schema, subject));
  }

  return {
    async encode(event) {
      const schemaId = schemaIds.get(event.type);
      if (schemaId === undefined) throw new UnknownEventTypeError(`No schema registered for ${event.type}`);
      // The registry's JSON Schema cannot say "no NUL, no lone surrogate"; nothing that breaks every
      // consumer downstream may be appended.
      const problem = findUnstorableText(event);
      if (problem) throw new UnstorableTextError(problem);
      return registry.encode(schemaId, sealer ? await sealer.seal(event) : event);
    },
    async decode(record, options) {
      // The registry client validates the record against the writer's schema, found by the id in the
      // record; that schema was generated from our zod schema, so parsing again with zod would only
      // repeat the work (it halves the projector's decoding cost on a bulk import).
      const payload = (await registry.decode(record)) as { type?: unknown };
      if (!eventDefinitionsByType.has(String(payload.type))) {
        throw new UnknownEventTypeError(`Unknown event type ${String(payload.type)}`);
      }
      const event = payload as DomainEvent;
      return sealer && (options?.opens?.(event.type) ?? true) ? sealer.open(event) : event;
    },
  };
}
