/**
 * Every problem `code` the service can answer, with its HTTP status and meaning. It is the contract's
 * single list: the Problem schema's `code` enum, each operation's documented statuses and a test that
 * scans the source for thrown codes all read it. A new code is one line here; `appliesTo` says which
 * operations can answer it (by default none: codes of undocumented routes only).
 */

/** What the document says about an operation, for deciding which codes it can answer. */
export interface OperationFacts {
  operationId: string;
  method: string;
  /** The OpenAPI path, relative to the server URL: `/accounts/{id}/leads/{phone}`. */
  path: string;
  hasBody: boolean;
  hasInput: boolean;
}

type AppliesTo = (operation: OperationFacts) => boolean;

export interface ErrorEntry {
  status: number;
  description: string;
  appliesTo?: AppliesTo;
}

const every: AppliesTo = () => true;
const withInput: AppliesTo = (operation) => operation.hasInput;
const withBody: AppliesTo = (operation) => operation.hasBody;
const writes: AppliesTo = (operation) => operation.method !== 'get';
const postOrPatch: AppliesTo = (operation) => operation.method === 'post' || operation.method === 'patch';
const pathParam =
  (name: string): AppliesTo =>
  (operation) =>
    operation.path.includes(`{${name}}`);
const accountScoped: AppliesTo = (operation) =>
  pathParam('id')(operation) || operation.operationId === 'getUsage';
const operations =
  (...ids: string[]): AppliesTo =>
  (operation) =>
    ids.includes(operation.operationId);

const entry = (status: number, description: string, appliesTo?: AppliesTo): ErrorEntry => ({
  status,
  description,
  ...(appliesTo && { appliesTo }),
});

export const errorCatalog = {
  validation_failed: entry(
    400,
    'A path, query or body field is invalid; `errors[]` names each field.',
    withInput,
  ),
  invalid_phone: entry(400, '`phone` is not a phone number.', operations('getPromptSettings')),
  multipart_required: entry(400, 'The upload is not `multipart/form-data`.', operations('uploadContextFile')),
  malformed_multipart: entry(
    400,
    'The multipart body cannot be read: no boundary in `Content-Type`, no closing boundary, or a malformed part.',
    operations('uploadContextFile'),
  ),
  file_required: entry(400, 'The multipart part `file` is missing.', operations('uploadContextFile')),
  unsupported_file_type: entry(
    400,
    'Context files are `.txt` or `.md` files of UTF-8 text.',
    operations('uploadContextFile'),
  ),
  invalid_idempotency_key: entry(
    400,
    '`Idempotency-Key` is empty, over 255 characters or not printable ASCII.',
    postOrPatch,
  ),
  idempotency_key_in_progress: entry(
    409,
    'A request with this `Idempotency-Key` is still running; retry once it has answered.',
    postOrPatch,
  ),
  idempotency_key_reused: entry(
    422,
    'This `Idempotency-Key` was used with another method, path or body in the last 24 hours.',
    postOrPatch,
  ),
  bad_request: entry(
    400,
    'The body is not well-formed JSON (or not UTF-8), or is empty where one is required.',
    withBody,
  ),
  malformed_request: entry(
    400,
    "Node's HTTP parser could not read the request (its framing, chunking, a header name, Content-Length with Transfer-Encoding, a NUL in the path); the connection is closed.",
    every,
  ),
  request_timeout: entry(408, 'The request did not arrive in time; the connection is closed.'),
  headers_too_large: entry(
    431,
    'The request line and headers are over the size the server reads; the connection is closed.',
    every,
  ),
  missing_api_key: entry(401, 'No `X-Partner-Key` header.', every),
  invalid_api_key: entry(401, 'The partner key is unknown or revoked.', every),
  invalid_signature: entry(
    403,
    "Twilio's `X-Twilio-Signature` does not match the request (Twilio webhooks only).",
  ),
  account_not_found: entry(
    404,
    "No such account for this partner (another partner's account too).",
    accountScoped,
  ),
  lead_not_found: entry(
    404,
    'The account has no lead (or, for conversations, no messages) with this phone; for an erasure, nothing of this phone and no erasure of it before.',
    pathParam('phone'),
  ),
  requirement_not_found: entry(
    404,
    'The account has no requirement with this id.',
    pathParam('requirement_id'),
  ),
  sequence_not_found: entry(
    404,
    "No such sequence in the account (another account's too).",
    pathParam('sequence_id'),
  ),
  context_file_not_found: entry(404, 'The account has no context file with this id.', pathParam('file_id')),
  context_url_not_found: entry(404, 'The account has no context URL with this id.', pathParam('url_id')),
  document_not_found: entry(
    404,
    'The signed document URL is unknown, expired or altered.',
    operations('getDocument'),
  ),
  webhook_not_found: entry(
    404,
    "No such webhook for this partner (another partner's webhook too).",
    pathParam('webhook_id'),
  ),
  delivery_not_found: entry(404, 'The webhook has no delivery with this id.', pathParam('delivery_id')),
  message_not_found: entry(404, 'A Twilio status callback names no message we sent (Twilio webhooks only).'),
  phone_number_not_found: entry(404, 'An inbound SMS is addressed to no account (Twilio webhooks only).'),
  partner_not_found: entry(404, 'The partner CLI names no such partner (operator CLI only).'),
  api_key_not_found: entry(404, 'The partner CLI names no such key (operator CLI only).'),
  ambiguous_api_key: entry(
    409,
    'Several keys match the prefix given to the partner CLI (operator CLI only).',
  ),
  too_many_active_keys: entry(409, 'The partner has two active keys; revoke one first (operator CLI only).'),
  missing_embed_token: entry(401, 'No `Authorization: Bearer` embed token (embedded dashboard only).'),
  invalid_embed_token: entry(
    401,
    'The embed token is unknown, expired or revoked, or its account is deactivated (embedded dashboard only).',
  ),
  embed_role_forbidden: entry(403, "The embed token's role may not do this (embedded dashboard only)."),
  asset_not_found: entry(404, 'No such file of the embedded dashboard.'),
  route_not_found: entry(404, 'No route has this method and path.'),
  phone_number_in_use: entry(
    409,
    'Another account already uses this phone number.',
    operations('createAccount'),
  ),
  phone_number_not_owned: entry(
    422,
    "With Twilio configured, a supplied number must be one of our Twilio account's numbers.",
    operations('createAccount'),
  ),
  account_active: entry(
    409,
    'The account is active; deactivate it before releasing its number.',
    operations('releaseAccountPhoneNumber'),
  ),
  account_erased: entry(
    409,
    'The account was erased; it takes no more writes but its erasure again and the release of its number.',
    operations(
      'updateAccount',
      'inviteTeamMember',
      'importLead',
      'importLeads',
      'updateLead',
      'deleteLead',
      'grantConsent',
      'sendMessage',
      'resumeAi',
      'createSequence',
      'updateSequence',
      'deleteSequence',
      'enrollLead',
      'unenrollLead',
      'createRequirement',
      'updateRequirement',
      'deleteRequirement',
      'updatePromptSettings',
      'uploadContextFile',
      'deleteContextFile',
      'createContextUrl',
      'deleteContextUrl',
      'submitCarrierRegistration',
    ),
  ),
  phone_number_released: entry(
    409,
    'The account released its number; it cannot be reactivated.',
    operations('updateAccount'),
  ),
  sequence_limit_reached: entry(
    400,
    'The account has 100 sequences, the most it can have.',
    operations('createSequence'),
  ),
  invalid_sending_window: entry(
    400,
    'The sending window would end before it starts.',
    operations('createAccount', 'updateAccount'),
  ),
  sequence_inactive: entry(
    409,
    'The sequence is inactive; activate it before enrolling leads.',
    operations('enrollLead'),
  ),
  context_file_limit_reached: entry(
    409,
    'The account has 20 context files, the most it can have.',
    operations('uploadContextFile'),
  ),
  context_url_exists: entry(409, 'The account already has this context URL.', operations('createContextUrl')),
  context_url_limit_reached: entry(
    409,
    'The account has 20 context URLs, the most it can have.',
    operations('createContextUrl'),
  ),
  context_url_unreachable: entry(
    422,
    'The page could not be fetched, or held no text to use.',
    operations('createContextUrl'),
  ),
  team_member_exists: entry(
    409,
    'This e-mail address is already on the team.',
    operations('inviteTeamMember'),
  ),
  external_id_in_use: entry(
    409,
    'Another lead of the account has this `external_id`.',
    operations('updateLead'),
  ),
  requirement_exists: entry(
    409,
    'The account has a requirement with this name.',
    operations('createRequirement', 'updateRequirement'),
  ),
  requirement_limit_reached: entry(
    409,
    'The account has 100 requirements, the most it can have.',
    operations('createRequirement'),
  ),
  account_deactivated: entry(
    409,
    'The account is deactivated; reactivate it to send messages or embed its dashboard.',
    operations('sendMessage', 'createEmbedToken', 'enrollLead'),
  ),
  lead_opted_out: entry(
    409,
    'The number opted out (it texted STOP or asked not to be contacted); it can opt back in with START.',
    operations('sendMessage', 'enrollLead'),
  ),
  webhook_limit_reached: entry(
    409,
    'The partner has 20 webhooks, the most it can have; `limit` says so.',
    operations('createWebhook'),
  ),
  delivery_pending: entry(
    409,
    'The delivery is still pending; its next attempt is scheduled.',
    operations('retryDelivery'),
  ),
  webhook_inactive: entry(
    409,
    'The webhook is disabled; activate it before sending a test event.',
    operations('sendTestEvent'),
  ),
  registration_in_review: entry(
    409,
    "The carriers are reviewing the account's registration; another profile is taken once a step has failed.",
    operations('submitCarrierRegistration'),
  ),
  registration_approved: entry(
    409,
    "The carriers approved the account's registration; its business profile can no longer change.",
    operations('submitCarrierRegistration'),
  ),
  uri_too_long: entry(414, 'A path parameter is too long.', (operation) => operation.path.includes('{')),
  file_too_large: entry(413, 'Context files are at most 100 KB.', operations('uploadContextFile')),
  payload_too_large: entry(413, 'The body is over 2 MB (24 MB for a bulk lead import).', withBody),
  event_batch_too_large: entry(
    413,
    'The events the request produces are over what one request may append (30 MB); nothing was written, split the request.',
    operations('importLeads'),
  ),
  unsupported_media_type: entry(
    415,
    'The body is not `application/json` in UTF-8, or has a `Content-Encoding` other than `identity`.',
    withBody,
  ),
  rate_limited: entry(
    429,
    'Over the rate limit of the partner key; retry after `Retry-After` seconds.',
    every,
  ),
  too_many_failed_authentications: entry(
    429,
    'Too many requests with an invalid or missing key from this address; retry after `Retry-After` seconds.',
    every,
  ),
  internal_error: entry(
    500,
    'Something went wrong on our side; the details are in our logs, not here.',
    every,
  ),
  projection_lagging: entry(
    503,
    'The read models are catching up with the event log; nothing was written, retry after `Retry-After`.',
    writes,
  ),
  event_log_unavailable: entry(
    503,
    'The event log did not accept the write; nothing was written, retry after `Retry-After`.',
    writes,
  ),
  log_migrating: entry(
    503,
    'The event log is cutting over to a new generation of topics (a few seconds, by an operator); nothing was written, retry after `Retry-After`.',
    writes,
  ),
  database_busy: entry(
    503,
    'The database did not answer in time (a lock, statement or connection timeout) or refused a connection (at its connection limit); nothing was written, retry after `Retry-After`.',
    every,
  ),
  telephony_unavailable: entry(
    503,
    'The telephony provider did not answer; nothing was written, retry after `Retry-After`.',
    operations('createAccount'),
  ),
  account_held: entry(
    503,
    'A record of this account waits for an operator; writes to it are paused, nothing was written.',
    (operation) => accountScoped(operation) && operation.method !== 'get',
  ),
  live_updates_unavailable: entry(
    503,
    'Live updates are not available from this server (embedded dashboard only).',
  ),
  dashboard_not_built: entry(503, 'The embedded dashboard has not been built on this server.'),
  not_ready: entry(503, 'The service is not ready (readiness probe only).'),
} satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof errorCatalog;

export const errorCodes = Object.keys(errorCatalog) as ErrorCode[];

/** The codes an operation can answer, by HTTP status. */
export function codesByStatus(operation: OperationFacts): Map<number, ErrorCode[]> {
  const entry = (code: ErrorCode) => errorCatalog[code] as ErrorEntry;
  const codes = errorCodes.filter((code) => entry(code).appliesTo?.(operation));
  return Map.groupBy(codes, (code) => entry(code).status);
}
