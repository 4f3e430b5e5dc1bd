import { describe, expect, it } from 'vitest';
import { leadDeleted } from './catalog/leads';
import { cleanText, findUnstorableText, isStorableText } from './text';

describe('the string rule', () => {
  it('refuses NUL and lone surrogates, and accepts everything else Unicode has', () => {
    for (const bad of ['\u0000', 'a\u0000', '\ud800', 'x\udc00y', '\udc00\ud800'])
      expect(isStorableText(bad)).toBe(false);
    for (const good of ['', '\ufeffBOM', '😀👍🏽', '\u202e\u200f\u05e9', '\ufffd', '\ud83d\ude00'])
      expect(isStorableText(good)).toBe(true);
  });

  it('cleans text from phones: NUL removed, lone surrogates replaced by U+FFFD', () => {
    expect(cleanText('a\u0000b \ud800 c \udc00 😀')).toBe('ab \ufffd c \ufffd 😀');
  });

  it('names the first offending value or key at any depth', () => {
    expect(findUnstorableText({ a: [1, { b: 'ok' }, { c: 'x\u0000' }] }, 'body')).toEqual({
      field: 'body.a.2.c',
      message: 'Must not contain the NUL character (U+0000).',
    });
    expect(findUnstorableText({ meta: { '\ud800': 1 } })?.field).toBe('meta.\ufffd');
    expect(findUnstorableText({ a: ['fine', { b: null }] })).toBeUndefined();
  });

  it('walks a document nested far deeper than the stack allows', () => {
    let nested: unknown = 'bad\u0000';
    for (let depth = 0; depth < 200_000; depth++) nested = { a: nested };
    expect(findUnstorableText(nested)?.message).toMatch(/NUL/);
  });

  it('is part of the envelope of every event type: its schema refuses such text, naming the field', () => {
    const event = {
      id: '0198e0c4-1a2b-7c3d-8e4f-5a6b7c8d9e0f',
      type: 'lead.deleted',
      version: 1,
      account_id: 'account',
      partner_id: 'partner',
      occurred_at: '2026-03-01T12:00:00.000Z',
      actor: { kind: 'system', service: 'test' },
      correlation_id: 'c',
      causation_id: null,
      data: { lead_id: 'lead', phone: '+15125550100' },
    };
    expect(leadDeleted.schema.safeParse(event).success).toBe(true);
    const refused = leadDeleted.schema.safeParse({ ...event, data: { ...event.data, phone: '+1\u0000' } });
    expect(refused.error?.issues).toEqual([expect.objectContaining({ path: ['data', 'phone'] })]);
  });
});
