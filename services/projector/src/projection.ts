import type { DomainEvent, EventType } from '@leadline/events';
import type { Database, PersonalDataKeys } from '@leadline/runtime';
import type { Transaction } from 'kysely';

/**
 * One read model's reaction to the log. `apply` receives, in log order, a run of consecutive events of a
 * batch that it handles (see `segmentsInLogOrder`), inside the batch's transaction, so it can write them
 * with multi-row statements.
 * The projector applies each record exactly once per read-model schema (the checkpoint guard), and
 * handlers are written to be idempotent as well, since delivery is at-least-once.
 */
export interface Projection {
  readonly name: string;
  readonly handles: ReadonlySet<EventType>;
  apply(
    trx: Transaction<Database>,
    events: readonly DomainEvent[],
    context?: ProjectionContext,
  ): Promise<void>;
}

/**
 * What a projection may need besides the database: an erasure finds and forgets a person with these,
 * and the opt-out it keeps is found again by the number's keyed hash (leads/suppression.ts).
 */
export interface ProjectionContext {
  /** Absent only where no erasure is applied (a test applying a batch by hand). */
  personalDataKeys?: Pick<PersonalDataKeys, 'subjectOf'> | undefined;
  /**
   * Which accounts keep opt-outs past an erasure, as far as this batch's transaction has looked
   * (leads/suppression.ts): a batch's runs ask once, not once each. A new map for every batch.
   */
  suppressedAccounts?: Map<string, boolean>;
}

export function defineProjection<const T extends EventType>(
  name: string,
  handles: readonly T[],
  apply: (
    trx: Transaction<Database>,
    events: readonly Extract<DomainEvent, { type: T }>[],
    context: ProjectionContext,
  ) => Promise<void>,
): Projection {
  return {
    name,
    handles: new Set(handles),
    apply: (trx, events, context = {}) => apply(trx, events as Extract<DomainEvent, { type: T }>[], context),
  };
}
