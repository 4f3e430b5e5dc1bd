import type { z } from 'zod';
import { envelopeSchema, type TopicKind } from './envelope';

export interface EventDefinition<T extends string = string, S extends z.ZodType = z.ZodType> {
  readonly type: T;
  readonly version: number;
  readonly topic: TopicKind;
  /** The whole record: envelope plus `data`. */
  readonly schema: S;
}

export function defineEvent<const T extends string, D extends z.ZodType, const K extends TopicKind>(
  type: T,
  options: { topic: K; version?: number; data: D },
) {
  const version = options.version ?? 1;
  return {
    type,
    version,
    topic: options.topic,
    schema: envelopeSchema(type, version, options.data, options.topic),
  } satisfies EventDefinition;
}
