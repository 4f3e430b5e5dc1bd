/** A sequence as the partner defines it, and the account's sequences decider. */
import type { EventData, NewEvent } from '@leadline/events';
import { DomainError, notFound } from '../errors';

/** A step of a sequence, as the partner defines it (its `order` is its position). */
export interface SequenceStep {
  type: 'fixed' | 'ai';
  message: string | null;
  instructions: string | null;
  delay_hours: number;
  skip_if_replied: boolean;
}

export const MAX_STEPS = 50;
export const MAX_SEQUENCES = 100;

export interface Sequence {
  id: string;
  name: string;
  description: string | null;
  is_active: boolean;
  is_default: boolean;
  steps: SequenceStep[];
  steps_version: number;
}

export type SequenceChanges = Partial<
  Pick<Sequence, 'name' | 'description' | 'is_active' | 'is_default' | 'steps'>
>;

export type SequenceCommand =
  | { type: 'CreateSequence'; sequence: Omit<Sequence, 'steps_version'> }
  | { type: 'UpdateSequence'; sequence_id: string; changes: SequenceChanges }
  | { type: 'DeleteSequence'; sequence_id: string; active_enrollments: number };

/** The default sequence loses its flag when another one takes it: one default per account. */
function previousDefaultCleared(sequences: readonly Sequence[], newDefault: string): NewEvent[] {
  return sequences
    .filter((sequence) => sequence.is_default && sequence.id !== newDefault)
    .map((sequence) => ({
      type: 'sequence.updated',
      data: { sequence_id: sequence.id, changes: { is_default: false } },
    }));
}

/** The account's sequences decider. Updating steps makes a new steps version; enrollments keep theirs. */
export function decideSequences(command: SequenceCommand, sequences: readonly Sequence[]): NewEvent[] {
  switch (command.type) {
    case 'CreateSequence': {
      if (sequences.length >= MAX_SEQUENCES) {
        throw new DomainError(
          400,
          'sequence_limit_reached',
          `An account has at most ${MAX_SEQUENCES} sequences.`,
        );
      }
      const { id, ...fields } = command.sequence;
      return [
        ...(fields.is_default ? previousDefaultCleared(sequences, id) : []),
        { type: 'sequence.created', data: { sequence_id: id, ...fields, steps_version: 1 } },
      ];
    }
    case 'UpdateSequence': {
      const current = sequences.find((sequence) => sequence.id === command.sequence_id);
      if (!current) throw notFound('sequence');
      const changes: EventData<'sequence.updated'>['changes'] = {};
      const { steps, ...fields } = command.changes;
      for (const [key, value] of Object.entries(fields) as [keyof typeof fields, unknown][]) {
        if (value !== undefined && value !== current[key]) Object.assign(changes, { [key]: value });
      }
      if (steps && JSON.stringify(steps) !== JSON.stringify(current.steps)) {
        changes.steps = steps;
        changes.steps_version = current.steps_version + 1;
      }
      if (Object.keys(changes).length === 0) return [];
      return [
        ...(changes.is_default ? previousDefaultCleared(sequences, current.id) : []),
        { type: 'sequence.updated', data: { sequence_id: current.id, changes } },
      ];
    }
    case 'DeleteSequence': {
      if (!sequences.some((sequence) => sequence.id === command.sequence_id)) throw notFound('sequence');
      return [
        {
          type: 'sequence.deleted',
          data: { sequence_id: command.sequence_id, cancelled_enrollments: command.active_enrollments },
        },
      ];
    }
    default: {
      const unknownCommand: never = command;
      throw new Error(`Unknown command ${(unknownCommand as { type: string }).type}`);
    }
  }
}
