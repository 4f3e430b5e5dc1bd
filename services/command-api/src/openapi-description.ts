/**
 * The OpenAPI document's description: the decisions a partner engineer needs that the field
 * schemas cannot say.
 */
export const apiDescription = `
AI-driven SMS follow-up for the customers of partner platforms. Every request carries the partner's
key in \`X-Partner-Key\`; the key covers all of the partner's sub-accounts (accounts).

**Errors** are RFC 9457 \`application/problem+json\` (the \`Problem\` schema) with a stable \`code\`; the
Problem schema lists every code with its status and meaning, and each operation lists the statuses it
can answer with the codes behind each. In short: 400 bad input (with \`errors[]\`, one entry per field; an id
in the path that is not a UUID is one too),
401 missing or invalid key, 404 unknown resource (another partner's resources are 404 too), 409 conflict,
413 body over 2 MB (24 MB for a bulk import), 415 not JSON, 429 rate limited, 500 our fault, 503 the event log or its read models
or the database are briefly unavailable or busy (nothing was written; every operation, reads included). Branch on \`code\`, not on \`detail\`.

**Request bodies** refuse unknown fields: a misspelt or read-only field is a 400 \`validation_failed\`
whose \`errors[]\` names it (\`body.active\`: Unknown field), never silently dropped.

**Consistency**: a write answers once its effect is readable, so a GET right after a POST sees it.

**Lists** take \`limit\` (1-250, default 50) and \`offset\` (0 or more); a value out of range is a 400.

**Rate limit**: each partner key may make 600 requests a minute by default (a fixed one-minute window,
counted per key across all its accounts). Every answer to a request with a valid key carries
\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` (seconds until the window
ends). Past the limit the answer is 429 \`rate_limited\` with \`Retry-After\` in seconds. A 503 also
carries \`Retry-After\`; retrying after it is safe, since nothing was written.

**Idempotency**: every POST and PATCH accepts an \`Idempotency-Key\` header (1-255 printable ASCII
characters; a UUID is a good choice), so a request retried after a timeout runs once. The first request's
status and body are kept for 24 hours per partner and key; a retry with the same key, method, path and
body (fields in any order) gets that answer again, byte for byte, with \`Idempotent-Replayed: true\`,
and runs nothing (no second message is sent). The same key with another request is a 422
\`idempotency_key_reused\`; a retry while the first request still runs is a 409
\`idempotency_key_in_progress\` (retry shortly). A request refused before it ran (a 400 for its input,
401, 429) keeps nothing, and 5xx answers are not kept: the key is released and a retry runs again. Keys
are scoped to the partner (each partner's keys are its own). For a context file upload, the key matches
on method and path; the file is not compared.

**Slugs** are the lowercased name with every run of other characters as \`-\`, made unique within the
partner by a numeric suffix (\`acme\`, \`acme-2\`); they never change.

**Phone numbers** are E.164; 10 digits are taken as US numbers (+1).

**Metadata** is merged on PATCH; a key set to \`null\` is removed.

**Conversations** are keyed by the lead's phone and outlive the lead (deleting a lead keeps its
messages). A manual message pauses the AI in its conversation until \`resume-ai\` or for the account's
\`ai_pause_minutes\` (default 1440), clears \`needs_handoff\`, and moves a \`new\` lead to \`contacted\`.
Outbound messages show their delivery \`status\` (\`queued\`, \`sent\`, \`delivered\`, \`undelivered\`,
\`failed\`); inbound ones show \`received\`.

**Opt-out**: a lead texting only STOP, STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, REVOKE or OPTOUT (in any
case, with punctuation, spacing or hyphens: \`Stop.\`, \`stop!!\`, \`opt-out\`, \`stop all\`, \`unsubscribe me\`) is opted
out (\`opted_out\` on the lead and the conversation) and gets one confirmation. So is a lead asking in its
own words, in English or Spanish, not to be contacted any more (\`please stop texting me\`, \`take me off
your list\`, \`no más mensajes\`, \`dejen de enviarme mensajes\`), recognised by deterministic rules and,
with a model configured, by the AI; a message that only uses the words about something else (\`stop by the
office?\`, \`I want to cancel my appointment\`) is an ordinary reply. Each lead gets one confirmation
however many ways it asks. START, UNSTOP or YES opt back in; HELP is answered. These replies have
\`source: system\`. Sending to an opted-out number is a 409 \`lead_opted_out\`.

**Sending pace**: messages leave each account's number at most at its throughput (1 a second for a
US long code unless the campaign was granted more) and within the brand's daily cap when one is set, so
a burst of sequence steps is spread out, not refused. Until the account's carrier registration has its
campaign approved (where the rule is enforced), its US long code sends only opt-out confirmations and
HELP answers; other messages stay \`queued\` and go once it is approved. A sequence step that cannot leave
before the lead's sending window closes waits for the next window. An opt-out confirmation that cannot
be sent within five minutes of the opt-out is not sent at all (\`failed\`).

**Consent**: each lead has a consent trail (\`GET /accounts/{id}/leads/{phone}/consent\`): the grants you
record with their evidence (\`POST …/consent\`, or \`consent\` on a lead import), each opt-out the lead
texts (a revocation, with its message) and each START. Accounts created with \`consent_required\` (the
default) send sequence steps, AI-written ones too, only to leads whose consent is \`granted\`; the others'
steps wait with \`hold_reason: no_consent\` until consent is recorded. Replies to a lead who wrote first and
manual messages never wait for it. \`GET /accounts/{id}/consent/export\` streams an account's records as
NDJSON or CSV, of any size.

**Sequences** send their steps \`delay_hours\` apart, each through the same rules as a manual message
(\`source: sequence\`), and only inside the lead's sending window: the account's \`sending_window\`
(default 08:00-21:00) in the lead's time zone from its area code, narrowed to 08:00-20:00 for Florida,
Oklahoma, Maryland and Washington numbers and 09:00-20:00 for Connecticut. \`next_step_at\` is the real
send time. An enrollment keeps the steps it started with; a reply skips \`skip_if_replied\` steps; an
opt-out stops the enrollment (\`sequence.status: opted_out\`); a deactivated account or an inactive
sequence pauses it. Templates take \`{{first_name|fallback}}\`; a missing first name reads "there".

**Webhooks** (see \`webhooks\` in this document for every payload's schema): at most 20 per partner, HTTPS
only. Each delivery is signed: \`X-Service-Signature\` is the hex HMAC-SHA256 of the exact body with your
secret; \`X-Service-Timestamp\` and \`X-Service-Timestamped-Signature\` (HMAC of \`<timestamp>.<body>\`) let
you refuse replays older than five minutes; \`X-Service-Delivery-Id\` stays the same across retries.
Answer 2xx within 10 s. Failures are retried 30 s, 2 min, 10 min, 1 h and 4 h after the previous
attempt (a longer \`Retry-After\` is honoured), then dropped and logged as \`webhook.delivery_failed\`.
Redirects are not followed. A 410 disables the webhook.
`.trim();

/** The document's tags: every operation's tag is declared here, with what it groups. */
export const apiTags = [
  {
    name: 'Accounts',
    description: 'Sub-accounts: one per customer of the partner, each with its own number.',
  },
  {
    name: 'Leads',
    description: 'The people an account follows up, keyed by phone number within the account.',
  },
  {
    name: 'Consent',
    description:
      "Proof that a lead agreed to be texted: each lead's consent trail (grants with their evidence, texted revocations and START) and an export of an account's records for a dispute.",
  },
  {
    name: 'Requirements',
    description: 'The checklist of documents and data points the AI collects from leads.',
  },
  {
    name: 'Conversations',
    description: 'SMS threads with leads, keyed by phone; manual messages and the AI pause.',
  },
  {
    name: 'Sequences',
    description:
      "Drip campaigns of fixed and AI-written steps, sent inside each lead's legal sending window.",
  },
  {
    name: 'AI configuration',
    description: 'The prompt the AI converses with, and the company context it is given (files and pages).',
  },
  {
    name: 'Checklist',
    description:
      'Documents collected for a checklist, served through signed, expiring URLs that need no partner key.',
  },
  {
    name: 'Compliance',
    description:
      "The carriers' registration of each account's number (US A2P 10DLC): business profile, brand, campaign and number, each reviewed in turn.",
  },
  { name: 'Usage', description: 'Monthly counters for billing.' },
  {
    name: 'Webhooks',
    description: 'Signed event notifications to the partner, with their deliveries log.',
  },
  {
    name: 'Webhook events',
    description: 'The payloads Leadline posts to your webhooks, one per event type, and how each is signed.',
  },
  {
    name: 'Embed',
    description:
      'Short-lived tokens that open the white-labeled dashboard of one account in an iframe, scoped to a role and a user name.',
  },
];
