import { describe, expect, it } from 'vitest';
import { storableExcerpt } from './http-client';

describe('the recorded excerpt of an answer', () => {
  it('drops NUL, replaces bytes that are not UTF-8 (a lone surrogate encoded included) and keeps the rest', () => {
    const answer = Buffer.concat([
      Buffer.from('ok\u0000!'),
      Buffer.from([0xed, 0xa0, 0x80, 0xff]),
      Buffer.from('é'),
    ]);
    const excerpt = storableExcerpt(answer)!;
    expect(excerpt.startsWith('ok!')).toBe(true);
    expect(excerpt.endsWith('é')).toBe(true);
    expect(excerpt).not.toContain('\u0000');
    expect((excerpt as unknown as { isWellFormed(): boolean }).isWellFormed()).toBe(true);
  });

  it('keeps only the first kilobyte of megabytes, even when it ends inside a character', () => {
    const excerpt = storableExcerpt(Buffer.from('€'.repeat(1_000_000)))!;
    expect(Buffer.byteLength(excerpt)).toBeLessThanOrEqual(1024 + 3);
    expect((excerpt as unknown as { isWellFormed(): boolean }).isWellFormed()).toBe(true);
  });

  it('is null for an empty answer', () => {
    expect(storableExcerpt(Buffer.alloc(0))).toBeNull();
  });
});
