import { describe, expect, it } from 'vitest';
import { checkAddress, resolveTarget } from './ssrf';

const strict = { allowPrivate: false };
const open = { allowPrivate: true };

describe('the address check', () => {
  it.each([
    ['93.184.216.34'],
    ['8.8.8.8'],
    ['2606:4700:4700::1111'],
    ['::ffff:8.8.8.8'],
    ['64:ff9b::808:808'],
  ])('allows the public address %s', (address) => {
    expect(checkAddress(address, strict)).toEqual({ allowed: true });
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2001:0:4136:e378::1', 'teredo'],
  ])('refuses %s (%s)', (address, range) => {
    const verdict = checkAddress(address, strict);
    expect(verdict.allowed).toBe(false);
    expect(verdict).toMatchObject({
      reason: expect.stringMatching(range === 'metadata' ? /metadata/ : range),
    });
  });

  it.each([['169.254.169.254'], ['168.63.129.16'], ['100.100.100.200'], ['fd00:ec2::254']])(
    'refuses the metadata address %s even when private targets are allowed',
    (address) => expect(checkAddress(address, open)).toMatchObject({ allowed: false }),
  );

  it.each([['127.0.0.1'], ['::1'], ['10.0.0.5'], ['::ffff:192.168.0.2'], ['100.64.1.1']])(
    'opens %s when private targets are allowed',
    (address) => expect(checkAddress(address, open)).toEqual({ allowed: true }),
  );

  it.each([['0.0.0.0'], ['224.0.0.1'], ['not-an-ip']])('never opens %s', (address) => {
    expect(checkAddress(address, open).allowed).toBe(false);
  });
});

describe('resolving a target', () => {
  const resolver = (answers: Record<string, string[]>) => async (hostname: string) =>
    (answers[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it('returns the checked address of a public host', async () => {
    await expect(
      resolveTarget('hooks.example.com', {
        ...strict,
        resolver: resolver({ 'hooks.example.com': ['93.184.216.34'] }),
      }),
    ).resolves.toEqual({ address: '93.184.216.34', family: 4 });
  });

  it('refuses a host with any private address among its answers', async () => {
    const mixed = resolver({ 'rebind.example.com': ['93.184.216.34', '127.0.0.1'] });
    // Said as the partner reads it in the deliveries log: neither the host nor the address we saw.
    await expect(resolveTarget('rebind.example.com', { ...strict, resolver: mixed })).rejects.toThrow(
      /^blocked: private address$/,
    );
  });

  it('checks IP literals, bracketed IPv6 included, without resolving', async () => {
    const never = async () => {
      throw new Error('must not resolve');
    };
    await expect(resolveTarget('[::1]', { ...strict, resolver: never })).rejects.toThrow(/blocked/);
    await expect(resolveTarget('[::1]', { ...open, resolver: never })).resolves.toEqual({
      address: '::1',
      family: 6,
    });
  });

  it('refuses a host that does not resolve', async () => {
    await expect(resolveTarget('nowhere.invalid', { ...strict, resolver: resolver({}) })).rejects.toThrow(
      /no address/,
    );
  });
});
