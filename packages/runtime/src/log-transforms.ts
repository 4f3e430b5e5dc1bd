import type { DomainEvent } from '@leadline/events';
import type { Kysely } from 'kysely';
import type { Database } from './db/schema';

/**
 * What `npm run migrate-log` passes each record of the log through on its way to the new generation.
 * Records stay in order per key whatever the transform does, and keep their key, headers and time.
 */
export interface LogTransform {
  /** Named on the command line and recorded with the generation, so a resumed copy uses the same. */
  name: string;
  /**
   * Rewrites one decoded event (same id, same type); the result is encoded again with the codec, under
   * the new generation's subjects. Without it, records are copied byte for byte.
   */
  apply?: (event: DomainEvent) => DomainEvent | Promise<DomainEvent>;
  /**
   * A record that does not decode (a type this version does not know, or a record off its schema,
   * which consumers park): `copy` it as it is, or `refuse` it, which stops the copy naming the record
   * (a transform that must see every value, such as sealing personal data, refuses).
   */
  undecodable: 'copy' | 'refuse';
}

/** The history as it is: more partitions, the same records. */
export const identityTransform: LogTransform = { name: 'identity', undecodable: 'copy' };

export interface LogTransformDeps {
  db: Kysely<Database>;
}

/**
 * Every personal value sealed under its subject's key: a log written before personal data was sealed
 * holds it in clear, and the codec the migration re-encodes with seals it (values already sealed are
 * opened and sealed again, unchanged in meaning). A record this version cannot read could hold clear
 * personal data, so it stops the copy rather than being copied as it is.
 */
export const sealPersonalDataTransform: LogTransform = {
  name: 'seal-personal-data',
  undecodable: 'refuse',
  apply: (event) => event,
};

/** The transforms `--transform <name>` picks from; each is built once per run. */
export const logTransforms: Record<string, (deps: LogTransformDeps) => LogTransform | Promise<LogTransform>> =
  {
    identity: () => identityTransform,
    'seal-personal-data': () => sealPersonalDataTransform,
  };
