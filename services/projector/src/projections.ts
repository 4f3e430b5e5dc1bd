import { accountsProjection } from './accounts/projection';
import { aiProjection } from './ai/projection';
import { checklistProjection } from './checklist/projection';
import { consentProjection } from './consent/projection';
import { complianceProjection } from './compliance/projection';
import { erasureProjection } from './leads/erasure';
import { leadsProjection } from './leads/projection';
import { suppressionProjection } from './leads/suppression';
import { messagingProjection } from './messaging/projection';
import type { Projection } from './projection';
import { requirementsProjection } from './requirements/projection';
import { retentionProjection } from './retention';
import { sequencesProjection } from './sequences/projection';
import { webhooksProjection } from './webhooks/projection';

/**
 * Every read model. A batch is applied in log order, run by run; a run that several projections handle
 * goes to them in this order: accounts first, since others keep per-account totals on the account row.
 */
export const projections: readonly Projection[] = [
  accountsProjection,
  leadsProjection,
  requirementsProjection,
  messagingProjection,
  // After messaging: it marks the conversations messaging made for a suppressed number.
  suppressionProjection,
  sequencesProjection,
  checklistProjection,
  consentProjection,
  aiProjection,
  webhooksProjection,
  complianceProjection,
  erasureProjection,
  retentionProjection,
];
