import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';
import type { DomainEvent } from '@leadline/events';
import { createPersonalDataSealer, type PersonalDataKeys, type SubjectKey } from '@leadline/runtime';
import { comparisonTable, measureInTurns } from './stats';

const STEPS = 20_000;
const LEADS = 1_000;

/**
 * Subject keys held in this process, as a running service holds those it read a moment ago: the
 * sealer's own cost (the walk over the event, the key lookups, the format) without the database.
 */
function keysInProcess(): PersonalDataKeys {
  const live = new Map<string, SubjectKey>();
  const byId = new Map<string, SubjectKey>();
  const name = (accountId: string, subject: string, period: string | null = null) =>
    `${accountId}\u0000${subject}\u0000${period ?? ''}`;
  const notMeasured = () => Promise.reject(new Error('not measured'));
  return {
    subjectOf: (accountId, kind, value) => `${kind}-${accountId}-${value}`,
    async sealingKeys(accountId, subjects, period = null) {
      return new Map(
        subjects.map((subject) => {
          let key = live.get(name(accountId, subject, period));
          if (!key) {
            key = { keyId: randomBytes(12).toString('base64url'), subject, key: randomBytes(32) };
            live.set(name(accountId, subject, period), key);
            byId.set(key.keyId, key);
          }
          return [subject, key];
        }),
      );
    },
    async openingKeys(keyIds) {
      return new Map(keyIds.flatMap((keyId) => (byId.has(keyId) ? [[keyId, byId.get(keyId)!]] : [])));
    },
    cachedSealingKey: (accountId, subject, period) => live.get(name(accountId, subject, period)),
    cachedOpeningKey: (keyId) => byId.get(keyId),
    eraseSubject: notMeasured,
    hasPeriodsBefore: notMeasured,
    expirePeriods: notMeasured,
    eraseAccount: notMeasured,
  };
}

const occurredAt = '2026-11-27T15:00:00.000Z';
const envelope = (type: string, id: string) => ({
  id,
  type,
  version: 1,
  account_id: 'account-sealing-bench',
  partner_id: 'partner-sealing-bench',
  occurred_at: occurredAt,
  actor: { kind: 'system', service: 'sequencer' },
  correlation_id: id,
  causation_id: null,
});
const phoneOf = (lead: number) => `+1512555${String(lead).padStart(4, '0')}`;
const body = 'Hi Wren, this is Dana at Castle Lending: can I send over the document checklist?';

/** What a sequence's first step appends for a lead: 3 events, 6 personal values. */
const stepEvents = (step: number): DomainEvent[] => {
  const phone = phoneOf(step % LEADS);
  const message = { message_id: `m-${step}`, phone };
  return [
    {
      ...envelope('conversation.started', `c-${step}`),
      data: {
        ...message,
        lead_id: `l-${step}`,
        lead_name: 'Wren Castellane',
        direction: 'outbound',
        message_body: body,
        message_source: 'sequence',
      },
    },
    {
      ...envelope('message.outbound_requested', `o-${step}`),
      data: { ...message, body, source: 'sequence', sender_name: null },
    },
    {
      ...envelope('sequence.step_sent', `s-${step}`),
      data: { ...message, enrollment_id: `e-${step}`, step_order: 0, next_step_at: null },
    },
  ] as unknown as DomainEvent[];
};
/** The personal values of a step, as sealed: what the floor encrypts and decrypts. */
const stepValues = [phoneOf(1), 'Wren Castellane', body, phoneOf(1), body, phoneOf(1)];

/**
 * `npm run bench sealing`: what sealing personal data costs per sequence step, on one core with the
 * keys already in memory, against its floor: the same values encrypted (or decrypted) with AES-256-GCM
 * by node:crypto alone, one call each, as the format requires. The difference is the sealer's own
 * work: walking the event, naming the subject, finding its keys, the format's encoding.
 */
export async function benchSealing(): Promise<string> {
  const sealer = createPersonalDataSealer(keysInProcess());
  const steps = Array.from({ length: STEPS }, (_, step) => stepEvents(step));
  // Every key made and every event sealed once before measuring: opening needs sealed events.
  const sealed = await Promise.all(
    steps.map((events) => Promise.all(events.map((event) => sealer.seal(event)))),
  );
  const key = createSecretKey(randomBytes(32));
  const aad = Buffer.from(`leadline.personal\u0000message.outbound_requested\u0000o-1\u0000data.body`);
  const encrypted = stepValues.map((value) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad);
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return { iv, tag: cipher.getAuthTag(), ciphertext };
  });
  const [seal, encryptAlone, open, decryptAlone] = await measureInTurns(
    [
      {
        name: 'seal a step (3 events, 6 values)',
        task: async (step) => void (await Promise.all(steps[step]!.map((event) => sealer.seal(event)))),
      },
      {
        name: '6 AES-256-GCM encryptions (node:crypto)',
        task: async () => {
          for (const value of stepValues) {
            const cipher = createCipheriv('aes-256-gcm', key, randomBytes(12)).setAAD(aad);
            cipher.update(value, 'utf8');
            cipher.final();
            cipher.getAuthTag();
          }
        },
      },
      {
        name: 'open a step (3 events, 6 values)',
        task: async (step) => void (await Promise.all(sealed[step]!.map((event) => sealer.open(event)))),
      },
      {
        name: '6 AES-256-GCM decryptions (node:crypto)',
        task: async () => {
          for (const { iv, tag, ciphertext } of encrypted) {
            const decipher = createDecipheriv('aes-256-gcm', key, iv).setAAD(aad).setAuthTag(tag);
            decipher.update(ciphertext).toString('utf8');
            decipher.final();
          }
        },
      },
    ],
    STEPS,
    1,
  );
  return [
    `Sealing (${STEPS} sequence steps of ${LEADS} leads, keys in memory, one at a time; latency per step)`,
    '',
    comparisonTable([
      { subject: seal!, baseline: encryptAlone! },
      { subject: open!, baseline: decryptAlone! },
    ]),
  ].join('\n');
}
