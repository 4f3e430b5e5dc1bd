import { accountsProjection } from './accounts/projection';
import type { Projection } from './projection';
import { webhooksProjection } from './webhooks/projection';

/** Every read model, applied in this order within each batch. */
export const projections: readonly Projection[] = [accountsProjection, webhooksProjection];
