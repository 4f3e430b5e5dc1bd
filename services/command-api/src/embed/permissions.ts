export type EmbedRole = 'owner' | 'admin' | 'member';

/**
 * What a `member` may do besides reading: talk to leads and move them along, nothing that changes the
 * account's data model. Admins and owners may use every embed route. Routes are fastify's patterns,
 * relative to the embed API prefix.
 */
const MEMBER_WRITES = new Set([
  'POST /accounts/:id/conversations/:phone/messages',
  'POST /accounts/:id/conversations/:phone/resume-ai',
  'PATCH /accounts/:id/leads/:phone',
]);

/** Fields a member may send to PATCH a lead: only the status. */
const MEMBER_LEAD_FIELDS = new Set(['status']);

export function embedRoleAllows(role: EmbedRole, method: string, route: string, body: unknown): boolean {
  if (role === 'owner' || role === 'admin') return true;
  if (method === 'GET' || method === 'HEAD') return true;
  if (!MEMBER_WRITES.has(`${method} ${route}`)) return false;
  if (route === '/accounts/:id/leads/:phone') {
    return (
      typeof body === 'object' &&
      body !== null &&
      Object.keys(body).every((field) => MEMBER_LEAD_FIELDS.has(field))
    );
  }
  return true;
}

/** What the dashboard may offer the user; the server enforces the same table. */
export function embedCapabilities(role: EmbedRole) {
  const admin = role !== 'member';
  return {
    send_messages: true,
    change_lead_status: true,
    manage_leads: admin,
    manage_requirements: admin,
    manage_sequences: admin,
    manage_settings: admin,
  };
}
