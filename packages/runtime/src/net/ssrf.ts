import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/** A target no outbound fetch (webhook delivery, context page, MMS media) will connect to. */
export class TargetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

/**
 * Cloud metadata and host-agent addresses: refused even when private targets are allowed, since no
 * local test needs them and they hand out credentials. (169.254.169.254 and fd00:ec2::254 are in
 * ranges refused anyway; Azure's wire server is a public address.)
 */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '168.63.129.16',
  '100.100.100.200',
  'fd00:ec2::254',
]);

/** Ranges that only `WEBHOOK_ALLOW_PRIVATE_TARGETS=true` opens (for receivers on the same machine). */
const PRIVATE_RANGES = new Set(['loopback', 'private', 'linkLocal', 'carrierGradeNat', 'uniqueLocal']);

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/** The IPv4 address an IPv6 address carries, for the forms that reach IPv4 hosts. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray();
  const range = address.range();
  if (range === 'ipv4Mapped') return address.toIPv4Address();
  // NAT64 (64:ff9b::/96 and the local-use /48) carries the IPv4 address in the last 32 bits.
  if (range === 'rfc6052') return new ipaddr.IPv4(bytes.slice(12));
  // 6to4 (2002::/16) carries it in bits 16-48.
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6));
  // Deprecated IPv4-compatible addresses (::a.b.c.d); ::1 and :: have ranges of their own.
  if (range === 'unicast' && bytes.slice(0, 12).every((byte) => byte === 0)) {
    return new ipaddr.IPv4(bytes.slice(12));
  }
  return undefined;
}

/**
 * Whether the relay may connect to `address`: only global unicast, unless private targets are
 * allowed, in which case loopback, RFC 1918, link-local, CGNAT and unique-local are opened as well.
 * IPv4 addresses inside IPv6 (mapped, NAT64, 6to4, compatible) are judged as the IPv4 address.
 */
export function checkAddress(address: string, options: { allowPrivate: boolean }): AddressVerdict {
  if (!ipaddr.isValid(address)) return { allowed: false, reason: `${address} is not an IP address` };
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const inner = embeddedIPv4(parsed as ipaddr.IPv6);
    if (inner) parsed = inner;
  }
  const normalized = parsed.toString();
  if (METADATA_ADDRESSES.has(normalized)) {
    return { allowed: false, reason: `${address} is a cloud metadata address` };
  }
  const range = parsed.range();
  if (range === 'unicast') return { allowed: true };
  if (options.allowPrivate && PRIVATE_RANGES.has(range)) return { allowed: true };
  return { allowed: false, reason: `${address} is in a ${range} range` };
}

export interface ResolvedTarget {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Resolves the host once and checks every address it resolves to; a host with any refused address is
 * refused (a mixed answer is how DNS rebinding is usually staged). The caller connects only to the
 * returned address, so no second resolution can pick another one.
 */
export async function resolveTarget(
  hostname: string,
  options: { allowPrivate: boolean; resolver?: Resolver },
): Promise<ResolvedTarget> {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: { address: string; family: number }[];
  try {
    addresses = ipaddr.isValid(host)
      ? [{ address: host, family: host.includes(':') ? 6 : 4 }]
      : await (options.resolver ?? systemResolver)(host);
  } catch (error) {
    throw new TargetRefusedError(`Could not resolve ${host}: ${(error as Error).message}`);
  }
  if (addresses.length === 0) throw new TargetRefusedError(`${host} resolves to no address`);
  for (const { address } of addresses) {
    const verdict = checkAddress(address, options);
    // What it says reaches partners (delivery log, context URL errors): what happened, not the address.
    if (!verdict.allowed) throw new TargetRefusedError('blocked: private address');
  }
  const [first] = addresses;
  return { address: first!.address, family: first!.family === 6 ? 6 : 4 };
}
