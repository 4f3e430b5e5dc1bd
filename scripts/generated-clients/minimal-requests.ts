import type { components } from '../../.generated-clients/openapi-typescript/leadline-api';

/**
 * Compiled against openapi-typescript's types on its default flags: the smallest request a partner may
 * send must type-check, so a field with a default (which that tool makes required when the document
 * declares `default`) stays optional.
 */
type Schemas = components['schemas'];

export const account: Schemas['CreateAccountRequest'] = { name: 'Sunrise Mortgage' };
export const member: Schemas['InviteTeamMemberRequest'] = { email: 'maria@example.com' };
export const lead: Schemas['LeadImport'] = { phone: '+15125550123' };
export const requirement: Schemas['CreateRequirementRequest'] = { name: 'Pay stub', type: 'document' };
export const steps: Schemas['SequenceStepInput'][] = [
  { type: 'fixed', message: 'Hi {{first_name|there}}' },
  { type: 'ai', instructions: 'Ask about the budget' },
];
export const sequence: Schemas['CreateSequence'] = { name: 'Welcome', steps };
export const embedToken: Schemas['EmbedTokenRequest'] = {};
