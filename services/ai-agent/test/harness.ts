import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDb, createPostgresDocumentStore, newUuid, systemClock, type Clock } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startAiAgent, type AgentDeps, type RunningAgent } from '../src/agent';
import { offlineResponder } from '../src/offline';
import type { Responder } from '../src/turn';

export interface AgentSystem {
  system: TestSystem;
  partner: PartnerClient;
  other: PartnerClient;
  keys: { partner: string; other: string };
  agents: RunningAgent[];
  /** Starts (another) agent on the same database and log. */
  startAgent(overrides?: Partial<AgentDeps>): Promise<RunningAgent>;
  media: MediaServer;
  close(): Promise<void>;
}

export interface MediaServer {
  /** Serves `bytes` at a fresh URL on 127.0.0.1, with the given declared type. */
  host(bytes: Buffer, declaredType: string): string;
  close(): Promise<void>;
}

async function startMediaServer(): Promise<MediaServer> {
  const files = new Map<string, { bytes: Buffer; type: string }>();
  const server = createServer((request, response) => {
    const file = files.get(request.url ?? '');
    if (!file) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': file.type, 'content-length': file.bytes.length });
    response.end(file.bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host(bytes, type) {
      const path = `/media/${newUuid()}`;
      files.set(path, { bytes, type });
      return `http://127.0.0.1:${port}${path}`;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The command API, the projector and the AI agent on this file's own database and topics of the real
 * Kafka, registry and PostgreSQL; media served from a local HTTP server (private targets opened).
 */
export async function startAgentSystem(
  options: { clock?: Clock; responder?: Responder; agent?: Partial<AgentDeps> } = {},
): Promise<AgentSystem> {
  const clock = options.clock ?? systemClock;
  const system = await startSystem({ clock });
  const keys = {
    partner: await system.createPartner('Acme CRM'),
    other: await system.createPartner('Other CRM'),
  };
  const partner = partnerClient(system.app, keys.partner);
  const other = partnerClient(system.app, keys.other);
  const media = await startMediaServer();
  const agents: RunningAgent[] = [];
  const pools: ReturnType<typeof createDb>[] = [];
  async function startAgent(overrides: Partial<AgentDeps> = {}) {
    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 6 });
    pools.push(db);
    const agent = await startAiAgent({
      ...system.services,
      db,
      clock,
      newId: newUuid,
      groupId: `${system.env.config.TOPIC_PREFIX}leadline.ai-agent`,
      responder: options.responder ?? offlineResponder,
      documents: createPostgresDocumentStore(db, system.services.personalDataKeys),
      allowPrivateTargets: true,
      replyDelayMs: 0,
      maxMessagesPerLeadPerDay: 20,
      modelTimeoutMs: 5_000,
      unavailableAfterMs: 60_000,
      retryBaseMs: 50,
      pollIntervalMs: 50,
      onError: () => undefined,
      ...options.agent,
      ...overrides,
    });
    agents.push(agent);
    return agent;
  }
  await startAgent();
  return {
    system,
    partner,
    other,
    keys,
    agents,
    startAgent,
    media,
    async close() {
      for (const agent of agents) await agent.stop();
      for (const pool of pools) await pool.destroy();
      await media.close();
      await system.close();
    },
  };
}

let sids = 0;

/** An inbound SMS/MMS as Twilio posts it (no auth token configured, so unsigned). */
export async function inbound(
  system: TestSystem,
  to: string,
  from: string,
  body: string,
  media: { url: string; type: string }[] = [],
) {
  const sid = `SM${String(++sids).padStart(8, '0')}${newUuid().replaceAll('-', '').slice(0, 24)}`;
  const fields: Record<string, string> = {
    MessageSid: sid,
    AccountSid: 'ACtest',
    From: from,
    To: to,
    Body: body,
    NumMedia: String(media.length),
  };
  media.forEach((medium, index) => {
    fields[`MediaUrl${index}`] = medium.url;
    fields[`MediaContentType${index}`] = medium.type;
  });
  const response = await system.app.inject({
    method: 'POST',
    url: '/twilio/sms',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  });
  if (response.statusCode !== 200)
    throw new Error(`Inbound SMS refused: ${response.statusCode} ${response.body}`);
  return sid;
}

export interface Message {
  id: string;
  direction: 'inbound' | 'outbound';
  body: string;
  source?: string;
}

export async function messagesOf(
  partner: PartnerClient,
  accountId: string,
  phone: string,
): Promise<Message[]> {
  const { body } = await partner.get(
    `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages?limit=250`,
  );
  return (body.messages as Message[]).slice().reverse();
}

/** Waits until the conversation holds `count` AI (or sequence) messages and returns them, oldest first. */
export function aiMessages(
  partner: PartnerClient,
  accountId: string,
  phone: string,
  count: number,
  source = 'ai',
) {
  return eventually(
    async () => {
      const messages = (await messagesOf(partner, accountId, phone)).filter(
        (message) => message.source === source,
      );
      return messages.length >= count ? messages : undefined;
    },
    { message: `${count} ${source} message(s) to ${phone}` },
  );
}

/** How many inbound messages from this number wait in the agent's queue. */
export async function pendingMessageCount(system: TestSystem, phone: string): Promise<number> {
  const row = await system.services.db
    .selectFrom('ai_pending_messages')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('phone', '=', phone)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Waits until the agent has handled (recorded a turn for) every one of these inbound messages. */
export function handled(system: TestSystem, accountId: string, messageIds: string[]) {
  return eventually(
    async () => {
      const rows = await system.services.db
        .selectFrom('ai_handled_turns')
        .select('turn_key')
        .where('account_id', '=', accountId)
        .where(
          'turn_key',
          'in',
          messageIds.map((id) => `message:${id}`),
        )
        .execute();
      return rows.length === messageIds.length ? true : undefined;
    },
    { message: `turns handled for ${messageIds.join(', ')}` },
  );
}

/** The stored message id of an inbound message, by its provider id (MessageSid). */
export function messageIdOf(system: TestSystem, sid: string) {
  return eventually(async () => {
    const row = await system.services.db
      .selectFrom('messages')
      .select('id')
      .where('provider_message_id', '=', sid)
      .executeTakeFirst();
    return row?.id;
  });
}

export async function newAccount(
  partner: PartnerClient,
  requirements: { name: string; type: string; required?: boolean; description?: string }[] = [],
) {
  // Sequence steps here are about the AI, not consent (which has its own tests).
  const { body } = await partner.post('/accounts', {
    name: 'Sunrise Mortgage',
    company_name: 'Sunrise',
    consent_required: false,
  });
  for (const requirement of requirements) {
    const created = await partner.post(`/accounts/${body.id}/requirements`, requirement);
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  }
  return { id: body.id as string, number: body.phone_number as string };
}

/** A PNG of one pixel. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A one-page PDF whose text reads `text`. */
export function pdfWithText(text: string): Buffer {
  const stream = `BT /F1 12 Tf 72 712 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(pdf.length);
    pdf += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/**
 * Waits until the turn answering this inbound message is fully projected: `ai.turn_completed` is the
 * last event of a turn, so everything the turn decided (items, status, handoff) is readable after it.
 */
export async function turnSettled(system: TestSystem, accountId: string, sid: string) {
  await handled(system, accountId, [await messageIdOf(system, sid)]);
}
