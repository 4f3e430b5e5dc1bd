import { describe, expect, it } from 'vitest';
import { embedRoleAllows } from './permissions';

describe('embed roles', () => {
  it('lets a member read, message, resume the AI and change only a lead status', () => {
    expect(embedRoleAllows('member', 'GET', '/accounts/:id/leads', undefined)).toBe(true);
    expect(embedRoleAllows('member', 'POST', '/accounts/:id/conversations/:phone/messages', {})).toBe(true);
    expect(embedRoleAllows('member', 'POST', '/accounts/:id/conversations/:phone/resume-ai', {})).toBe(true);
    expect(embedRoleAllows('member', 'PATCH', '/accounts/:id/leads/:phone', { status: 'lost' })).toBe(true);
    expect(
      embedRoleAllows('member', 'PATCH', '/accounts/:id/leads/:phone', { status: 'lost', name: 'x' }),
    ).toBe(false);
    expect(embedRoleAllows('member', 'POST', '/accounts/:id/leads/bulk', { leads: [] })).toBe(false);
    expect(embedRoleAllows('member', 'DELETE', '/accounts/:id/requirements/:requirement_id', undefined)).toBe(
      false,
    );
  });

  it('lets admins and owners do everything the embed API offers', () => {
    for (const role of ['admin', 'owner'] as const) {
      expect(embedRoleAllows(role, 'POST', '/accounts/:id/leads/bulk', { leads: [] })).toBe(true);
      expect(embedRoleAllows(role, 'PATCH', '/accounts/:id/leads/:phone', { name: 'x' })).toBe(true);
    }
  });
});
