import type { EventData, NewEvent } from '@leadline/events';
import { conflict } from '../errors';

type RequirementFields = Omit<EventData<'requirement.created'>, 'requirement_id'>;

export interface Requirement extends RequirementFields {
  requirement_id: string;
}

/** The account's checklist definition, as decisions about it need it. */
export interface ChecklistState {
  requirements: readonly Requirement[];
}

export const MAX_REQUIREMENTS = 100;

export type RequirementCommand =
  | { type: 'CreateRequirement'; requirement: Requirement }
  | { type: 'UpdateRequirement'; requirement_id: string; changes: Partial<RequirementFields> }
  | { type: 'DeleteRequirement'; requirement_id: string };

const sameName = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

/** The checklist decider: names are unique per account (the AI refers to items by name). */
export function decideChecklist(command: RequirementCommand, { requirements }: ChecklistState): NewEvent[] {
  switch (command.type) {
    case 'CreateRequirement': {
      if (requirements.length >= MAX_REQUIREMENTS) {
        throw conflict(
          'requirement_limit_reached',
          `An account has at most ${MAX_REQUIREMENTS} requirements.`,
        );
      }
      if (requirements.some((requirement) => sameName(requirement.name, command.requirement.name))) {
        throw conflict('requirement_exists', 'A requirement with this name already exists.');
      }
      return [{ type: 'requirement.created', data: command.requirement }];
    }
    case 'UpdateRequirement': {
      const current = requirements.find(
        (requirement) => requirement.requirement_id === command.requirement_id,
      )!;
      const { name } = command.changes;
      if (
        name !== undefined &&
        requirements.some(
          (other) => other.requirement_id !== current.requirement_id && sameName(other.name, name),
        )
      ) {
        throw conflict('requirement_exists', 'A requirement with this name already exists.');
      }
      const changes = Object.fromEntries(
        Object.entries(command.changes).filter(
          ([key, value]) => value !== undefined && value !== current[key as keyof RequirementFields],
        ),
      );
      return Object.keys(changes).length > 0
        ? [{ type: 'requirement.updated', data: { requirement_id: current.requirement_id, changes } }]
        : [];
    }
    case 'DeleteRequirement':
      return [{ type: 'requirement.deleted', data: { requirement_id: command.requirement_id } }];
    default: {
      const unknownCommand: never = command;
      throw new Error(`Unknown command ${(unknownCommand as { type: string }).type}`);
    }
  }
}
