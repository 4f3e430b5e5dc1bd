import { z } from 'zod';
import { defineEvent } from '../define';

/**
 * Proof of consent to be texted. A lead's consent trail is its phone's `lead.consent_granted` events
 * together with the opt-out and opt-in it texted (`lead.opted_out`, `lead.opted_in`): a revocation is
 * the inbound message that opted the number out, recorded once, as the opt-out itself, and START is a
 * grant by SMS keyword. Like the opt-out, consent belongs to the phone number within the account, so it
 * survives the lead's deletion and re-import.
 */

/** How consent was given: a form on a web page, a signed paper, a call, a keyword texted, an import. */
export const consentMethods = ['web_form', 'paper', 'verbal', 'sms_keyword', 'import'] as const;

/** Which request recorded a grant: the consent route, a single lead import or a bulk import. */
export const consentRecordedVia = ['api', 'import', 'bulk_import'] as const;

/**
 * The partner recorded that `phone` agreed to be texted: how (`method`), when (`captured_at`, which may
 * be long before it was recorded), and the evidence a dispute needs: the page it was given on, the
 * address it came from, the exact disclosure shown and a link to the signed form or recording. A grant
 * with a `captured_at` earlier than the number's latest revocation records history and leaves it revoked.
 */
export const leadConsentGranted = defineEvent('lead.consent_granted', {
  topic: 'account',
  data: z.object({
    consent_id: z.string(),
    phone: z.string(),
    /** Null when no lead had the phone (never today: grants are recorded on leads). */
    lead_id: z.string().nullable(),
    method: z.enum(consentMethods),
    captured_at: z.iso.datetime(),
    source_url: z.string().nullable(),
    ip_address: z.string().nullable(),
    disclosure_text: z.string().nullable(),
    evidence_url: z.string().nullable(),
    recorded_via: z.enum(consentRecordedVia),
  }),
});
