import { describe, expect, it } from 'vitest';
import { allSubjects } from './registry-subjects';

const subjects = Array.from({ length: 2500 }, (_, index) => `subject-${String(index).padStart(4, '0')}`);

describe("a registry's subjects", () => {
  it('are listed past the first page, so a file finds its own wherever they sort', async () => {
    const pages: number[] = [];
    const listed = await allSubjects(async (offset, limit) => {
      pages.push(offset);
      return subjects.slice(offset, offset + limit);
    });
    expect(listed).toEqual(subjects);
    expect(pages).toEqual([0, 1000, 2000]);
  });

  it('are listed once from a registry that ignores the offset', async () => {
    const listed = await allSubjects(async (_offset, limit) => subjects.slice(0, limit));
    expect(listed).toEqual(subjects.slice(0, 1000));
  });
});
