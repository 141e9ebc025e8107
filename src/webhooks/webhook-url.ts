import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as lookupCallback, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { LookupSlots } from './lookup-slots.js';

/** What a URL may lead to: set per endpoint (--allow-private) and by WEBHOOKS_ALLOW_HTTP_LOOPBACK. */
export interface AddressPolicy {
  /** Private, link-local and other internal addresses are allowed (loopback too). */
  allowPrivate: boolean;
  /** Loopback addresses are allowed, over plain http too (development and tests). */
  allowHttpLoopback: boolean;
}

function blockList(subnets: [string, number, 'ipv4' | 'ipv6'][]): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of subnets) list.addSubnet(network, prefix, family);
  return list;
}

const LOOPBACK = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['::1', 128, 'ipv6'],
]);

/** Addresses a request from inside the service must not reach on a partner's say-so. */
const INTERNAL = blockList([
  ['0.0.0.0', 8, 'ipv4'], // "this network"
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['169.254.0.0', 16, 'ipv4'], // link-local, cloud metadata services
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'], // documentation (TEST-NET-1)
  ['192.88.99.0', 24, 'ipv4'], // former 6to4 relays
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'], // documentation (TEST-NET-2)
  ['203.0.113.0', 24, 'ipv4'], // documentation (TEST-NET-3)
  ['224.0.0.0', 3, 'ipv4'], // multicast and reserved, to 255.255.255.255
  ['::', 96, 'ipv6'], // unspecified, and IPv4-compatible (::7f00:1 is 127.0.0.1)
  ['::ffff:0:0:0', 96, 'ipv6'], // SIIT: an IPv4 address translated
  ['64:ff9b::', 96, 'ipv6'], // NAT64: an IPv4 address behind an IPv6 one
  ['64:ff9b:1::', 48, 'ipv6'], // local-use NAT64
  ['100::', 64, 'ipv6'], // discard-only
  ['2001::', 32, 'ipv6'], // Teredo: an IPv4 address inside
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['2002::', 16, 'ipv6'], // 6to4: an IPv4 address inside
  ['fec0::', 10, 'ipv6'], // site-local (deprecated, still routed in some networks)
  ['fc00::', 7, 'ipv6'], // unique local
  ['fe80::', 10, 'ipv6'], // link-local
  ['ff00::', 8, 'ipv6'], // multicast
]);

/** An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, or `::ffff:a00:1` as URLs write it) is judged as the IPv4 address it is. */
function normalise(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return { address: mapped[1], family: 'ipv4' };
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex?.[1] && hex[2]) {
    const [high, low] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
    return { address: `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, family: 'ipv4' };
  }
  return { address, family: isIP(address) === 6 ? 'ipv6' : 'ipv4' };
}

/** Why a connection to `address` is refused under `policy`, or null when it may be made. */
export function addressRefusal(address: string, protocol: string, policy: AddressPolicy): string | null {
  const a = normalise(address);
  const loopback = LOOPBACK.check(a.address, a.family);
  if (protocol === 'http:') {
    return policy.allowHttpLoopback && loopback ? null : `http is allowed only to a loopback address with WEBHOOKS_ALLOW_HTTP_LOOPBACK=true (${address})`;
  }
  if (loopback) {
    return policy.allowHttpLoopback || policy.allowPrivate ? null : `${address} is a loopback address (add the endpoint with --allow-private to allow it)`;
  }
  if (INTERNAL.check(a.address, a.family) && !policy.allowPrivate) {
    return `${address} is a private, link-local or reserved address (add the endpoint with --allow-private to allow it)`;
  }
  return null;
}

/** The URL's host as an address or a name ([::1] without its brackets). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Checks an endpoint URL when it is added: absolute, https (or http to loopback when
 * allowed), no credentials or fragment, and every address its host resolves to allowed.
 * Returns the URL as it will be stored; throws an Error whose message says what is wrong.
 */
export async function checkEndpointUrl(text: string, policy: AddressPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`'${text}' is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`the URL must be https: '${text}'`);
  if (url.username || url.password) throw new Error('the URL must not carry a user name or password');
  if (url.hash) throw new Error('the URL must not have a fragment (#…)');
  // Node's HTTP client takes port 0 for none given, and would send to 80 or 443 instead.
  if (url.port === '0') throw new Error(`the URL's port must be from 1 to 65535: '${text}'`);
  // An empty query names the same receiver as none: one spelling, so it cannot be added twice.
  if (url.search === '') url.search = '';
  if (url.href.length > 2048) throw new Error('the URL is longer than 2048 characters');
  // http goes to loopback only, and only where allowed: without that, no address can make it right.
  if (url.protocol === 'http:' && !policy.allowHttpLoopback) throw new Error(`the URL must be https (http is allowed only to a loopback address with WEBHOOKS_ALLOW_HTTP_LOOPBACK=true): '${text}'`);
  const host = hostOf(url);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (error) {
      throw new Error(`the host '${host}' does not resolve (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { cause: error });
    }
  }
  for (const address of addresses) {
    const refusal = addressRefusal(address, url.protocol, policy);
    if (refusal) throw new Error(`the URL is refused: ${refusal}`);
  }
  return url;
}

/** How many lookups of webhook hosts run at once in the process (see LookupSlots): half of libuv's default threadpool. */
const LOOKUPS_AT_ONCE = 2;
const deliveryLookups = new LookupSlots(LOOKUPS_AT_ONCE);

/** What looks a host name up: node:dns's lookup, with every address. */
export type Resolve = (hostname: string, options: LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/**
 * A DNS lookup for the delivery's socket that refuses an address the policy does not allow:
 * the check is made on the very address connected to, so a name that resolved to a public
 * address when the endpoint was added and to an internal one now (DNS rebinding) is refused.
 * Lookups take turns (LookupSlots): `gone` tells whether the delivery has ended, so that a
 * lookup still waiting for its turn is not made for nobody.
 */
export function guardedLookup(
  protocol: string,
  policy: AddressPolicy,
  gone: () => boolean = () => false,
  slots: LookupSlots = deliveryLookups,
  resolve: Resolve = lookupCallback,
): LookupFunction {
  return (hostname, options, callback) => {
    slots.take(hostname.toLowerCase(), gone, (done) => {
      const answer = (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]): void => {
        done();
        if (error) return callback(error, '', 0);
        for (const { address } of addresses) {
          const refusal = addressRefusal(address, protocol, policy);
          if (refusal) return callback(Object.assign(new Error(`refused: ${refusal}`), { code: 'EADDRNOTALLOWED' }), '', 0);
        }
        if (options.all) return callback(null, addresses);
        const [first] = addresses;
        return first ? callback(null, first.address, first.family) : callback(new Error(`${hostname} has no address`), '', 0);
      };
      try {
        resolve(hostname, { ...options, all: true }, answer);
      } catch (error) {
        // Refused before it started (an argument the lookup does not take): the turn is given back.
        answer(error as NodeJS.ErrnoException, []);
      }
    });
  };
}
