import { describe, expect, it } from 'vitest';
import { logSize } from '@leadline/test-kit';
import {
  system,
  acme,
  other,
  acmeKey,
  useConsentSystem,
  nextPhone,
  path,
  newAccount,
  webForm,
  inboundSms,
} from './consent-system';

useConsentSystem();

describe('consent_required', () => {
  it('is on for new accounts unless the partner says otherwise, and can be changed', async () => {
    expect((await newAccount()).consent_required).toBe(true);
    const off = await newAccount({ consent_required: false });
    expect(off.consent_required).toBe(false);
    const { body } = await acme.patch(`/accounts/${off.id}`, { consent_required: true });
    expect(body.consent_required).toBe(true);
    expect((await acme.get(`/accounts/${off.id}`)).body.consent_required).toBe(true);
  });
});

describe("a lead's consent trail", () => {
  it('records consent given on import, once, with its evidence', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    const imported = await acme.post(`/accounts/${account.id}/leads`, {
      phone,
      name: 'Ana Silva',
      consent: webForm,
    });
    expect(imported.status).toBe(201);
    expect(imported.body).toMatchObject({ action: 'created', consent_recorded: true });
    // Imported again with the same consent (a nightly sync): the trail does not grow.
    const again = await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    expect(again.body).toMatchObject({ action: 'skipped', consent_recorded: false });

    const { status, body } = await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`);
    expect(status).toBe(200);
    expect(body).toEqual({
      phone,
      status: 'granted',
      consent_required: true,
      opted_out: false,
      records: [
        {
          id: expect.any(String),
          phone,
          lead_name: 'Ana Silva',
          action: 'granted',
          ...webForm,
          captured_at: '2026-01-05T14:30:00.000Z',
          recorded_at: expect.any(String),
          recorded_via: 'import',
          recorded_by: expect.stringMatching(/^partner_key:/),
          keyword: null,
          message: null,
        },
      ],
      total: 1,
      limit: 50,
      offset: 0,
    });
  });

  it('records consent by its own route: 201 when new, 200 with the same record when repeated', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    const paper = {
      method: 'paper',
      captured_at: '2026-02-01T09:00:00-05:00',
      evidence_url: 'https://evidence.example/signed/12.pdf',
    };
    const first = await acme.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, paper);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      success: true,
      recorded: true,
      status: 'granted',
      record: {
        action: 'granted',
        method: 'paper',
        captured_at: '2026-02-01T14:00:00.000Z',
        recorded_via: 'api',
        source_url: null,
        ip_address: null,
        evidence_url: paper.evidence_url,
      },
    });
    const second = await acme.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, paper);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ recorded: false, record: { id: first.body.record.id } });
    expect((await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body.total).toBe(1);
  });

  it('shows a STOP as a revocation with the message that revoked it, and START as a grant again', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    await inboundSms(account.phone_number, phone, 'Stop.');
    const afterStop = (await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body;
    expect(afterStop).toMatchObject({ status: 'revoked', opted_out: true, total: 2 });
    expect(afterStop.records[1]).toMatchObject({
      action: 'revoked',
      method: 'sms_keyword',
      recorded_via: 'sms',
      recorded_by: 'system:twilio-inbound',
      keyword: expect.any(String),
      message: { body: 'Stop.', received_at: afterStop.records[1].captured_at },
    });

    await inboundSms(account.phone_number, phone, 'START');
    const afterStart = (await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body;
    expect(afterStart).toMatchObject({ status: 'granted', opted_out: false, total: 3 });
    expect(afterStart.records.map((record: { action: string }) => record.action)).toEqual([
      'granted',
      'revoked',
      'granted',
    ]);
    expect(afterStart.records[2]).toMatchObject({
      method: 'sms_keyword',
      keyword: 'START',
      message: { body: 'START' },
    });
  });

  it('shows a revocation written in words as such, with the rule that read it', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    await inboundSms(account.phone_number, phone, 'Please stop texting me.');
    const trail = (await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body;
    expect(trail).toMatchObject({ status: 'revoked', opted_out: true, total: 2 });
    expect(trail.records[1]).toMatchObject({
      action: 'revoked',
      method: 'sms_free_text',
      keyword: expect.any(String),
      message: { body: 'Please stop texting me.' },
    });
  });

  it('keeps a STOP in force over consent captured before it, however late that is recorded', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    await inboundSms(account.phone_number, phone, 'STOP');
    const older = await acme.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, webForm);
    expect(older.body).toMatchObject({ recorded: true, status: 'revoked' });
  });

  it('records consent per lead of a bulk import, reporting the bad ones without refusing the rest', async () => {
    const account = await newAccount();
    const [good, future, badIp] = [nextPhone(), nextPhone(), nextPhone()];
    const { status, body } = await acme.post(`/accounts/${account.id}/leads/bulk`, {
      leads: [
        { phone: good, consent: { method: 'import', captured_at: '2025-11-02T10:00:00Z' } },
        { phone: future, consent: { method: 'verbal', captured_at: '2099-01-01T00:00:00Z' } },
        { phone: badIp, consent: { ...webForm, ip_address: '999.1.1.1' } },
      ],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ imported: 1, consents_recorded: 1 });
    expect(body.errors).toEqual([
      {
        index: 1,
        phone: future,
        code: 'validation_failed',
        message: 'consent.captured_at: Must not be in the future.',
      },
      {
        index: 2,
        phone: badIp,
        code: 'validation_failed',
        message: expect.stringMatching(/^consent\.ip_address/),
      },
    ]);
    const trail = (await acme.get(`/accounts/${account.id}/leads/${path(good)}/consent`)).body;
    expect(trail.records).toMatchObject([{ method: 'import', recorded_via: 'bulk_import' }]);
  });
});

describe('bad input and tenancy', () => {
  it('answers bad consent input with a 400 problem naming the field, writing nothing', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    const before = await logSize(system.services);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...webForm, method: 'email' }, 'body.method'],
      [{ ...webForm, captured_at: 'yesterday' }, 'body.captured_at'],
      [{ ...webForm, captured_at: '2099-01-01T00:00:00Z' }, 'body.captured_at'],
      [{ ...webForm, source_url: 'javascript:alert(1)' }, 'body.source_url'],
      [{ ...webForm, ip_address: 'localhost' }, 'body.ip_address'],
      [{ ...webForm, disclosure_text: 'x'.repeat(5001) }, 'body.disclosure_text'],
      [{ ...webForm, signed: true }, 'body.signed'],
      [{ captured_at: webForm.captured_at }, 'body.method'],
    ];
    for (const [sent, field] of cases) {
      const response = await system.app.inject({
        method: 'POST',
        url: `/v1/accounts/${account.id}/leads/${path(phone)}/consent`,
        headers: { 'x-partner-key': acmeKey },
        payload: sent,
      });
      expect(response.statusCode, field).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json(), field).toMatchObject({
        code: 'validation_failed',
        errors: expect.arrayContaining([expect.objectContaining({ field })]),
      });
    }
    // An import whose consent is bad imports nothing either.
    const imported = await acme.post(`/accounts/${account.id}/leads`, {
      phone: nextPhone(),
      consent: { method: 'paper', captured_at: '2099-01-01T00:00:00Z' },
    });
    expect(imported.status).toBe(400);
    expect(imported.body.errors).toEqual([
      { field: 'body.consent.captured_at', message: 'Must not be in the future.' },
    ]);
    for (const query of ['format=xml', 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'from=soon']) {
      const exported = await acme.get(`/accounts/${account.id}/consent/export?${query}`);
      expect(exported.status, query).toBe(400);
      expect(exported.body.code).toBe('validation_failed');
    }
    expect(await logSize(system.services)).toBe(before);
    expect((await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body.total).toBe(0);
  });

  it("answers another partner's account, and an unknown lead, with a 404 and writes nothing", async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    const before = await logSize(system.services);
    const attempts = [
      await other.get(`/accounts/${account.id}/leads/${path(phone)}/consent`),
      await other.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, webForm),
      await other.get(`/accounts/${account.id}/consent/export`),
    ];
    for (const attempt of attempts)
      expect(attempt).toMatchObject({ status: 404, body: { code: 'account_not_found' } });
    const unknown = await acme.post(`/accounts/${account.id}/leads/${path(nextPhone())}/consent`, webForm);
    expect(unknown).toMatchObject({ status: 404, body: { code: 'lead_not_found' } });
    expect(await logSize(system.services)).toBe(before);
  });
});
