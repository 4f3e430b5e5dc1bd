import { describe, expect, it } from 'vitest';
import { offlineTurn } from './offline';
import type { TurnInput } from './turn';

const input = (text: string, overrides: Partial<TurnInput> = {}): TurnInput => ({
  systemPrompt: '',
  company: 'Sunrise',
  leadFirstName: null,
  history: [],
  burst: [{ message_id: 'm1', body: text }],
  attachments: [],
  instructions: null,
  checklist: [
    {
      requirement_id: 'r1',
      name: 'Email',
      type: 'email',
      description: null,
      required: true,
      collected: null,
    },
    {
      requirement_id: 'r2',
      name: 'Loan amount',
      type: 'number',
      description: null,
      required: true,
      collected: null,
    },
    {
      requirement_id: 'r3',
      name: 'Closing date',
      type: 'date',
      description: null,
      required: true,
      collected: null,
    },
  ],
  ...overrides,
});

describe('the offline responder', () => {
  it('extracts every typed value in one message and thanks the lead when complete', () => {
    const turn = offlineTurn(input('ana@example.com, $350,000, closing 2026-05-01'));
    expect(turn.collected.map((item) => [item.requirement_id, item.value])).toEqual([
      ['r1', 'ana@example.com'],
      ['r3', '2026-05-01'],
      ['r2', '350000'],
    ]);
    expect(turn.reply).toBe('Thank you! We have everything we need. Sunrise will be in touch soon.');
    expect(turn.summary).toContain('Checklist complete.');
  });

  it('asks for the next missing required item by name', () => {
    expect(offlineTurn(input('hello')).reply).toBe('Could you send me your Email?');
    expect(offlineTurn(input('ana@example.com')).reply).toBe('Thanks! Could you send me your Loan amount?');
  });

  it('records nothing from an address that is not valid, and asks again', () => {
    const turn = offlineTurn(input('my email is ana@example'));
    expect(turn.collected).toEqual([]);
    expect(turn.reply).toBe('Could you send me your Email?');
  });

  it('hands off when the lead asks for a person', () => {
    const turn = offlineTurn(input('can I speak to someone?'));
    expect(turn.handoff).toBe('lead_asked_for_person');
    expect(turn.collected).toEqual([]);
  });
});

describe('the offline responder on pathological text', () => {
  // Each of these was quadratic in the e-mail search (1.5 s at 40,000 characters), stalling every
  // account's turns behind one message. The bound is the issue's own: 50 ms, thirty times below the
  // quadratic cost; linear, each takes a few milliseconds here. (A burst is at most 1,600 characters a
  // message since the inbound webhook keeps no more, but the responder must not depend on that.)
  it.each([
    ['letters', 'a'.repeat(40_000)],
    ['digits', '1'.repeat(40_000)],
    ['dots', 'a.'.repeat(20_000)],
    ['one @ then no dot', `a@${'b'.repeat(39_998)}`],
    ['many @', 'a@'.repeat(20_000)],
    ['grouped digits', '1,'.repeat(20_000)],
    ['dashed digits', '1-'.repeat(20_000)],
  ])('answers 40,000 characters of %s in under 50 ms', (_name, text) => {
    offlineTurn(input('warm-up'));
    const started = performance.now();
    const turn = offlineTurn(input(text));
    expect(performance.now() - started).toBeLessThan(50);
    expect(turn.reply).not.toBeNull();
  });
});
