import type { LookupAddress } from 'node:dns';
import { LookupSlots } from './lookup-slots.js';
import { guardedLookup, type Resolve } from './webhook-url.js';

const policy = { allowPrivate: false, allowHttpLoopback: false };

/** A resolver whose lookups answer only when the test says so: a receiver's DNS that does not answer. */
function heldResolver(): { resolve: Resolve; asked: string[]; answer: (host: string, addresses: LookupAddress[]) => void } {
  const pending = new Map<string, ((error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void)[]>();
  const asked: string[] = [];
  return {
    asked,
    resolve: (hostname, _options, callback) => {
      asked.push(hostname);
      pending.set(hostname, [...(pending.get(hostname) ?? []), callback]);
    },
    answer: (host, addresses) => {
      const [first, ...rest] = pending.get(host) ?? [];
      pending.set(host, rest);
      first?.(null, addresses);
    },
  };
}

/** What a socket's lookup is called back with. */
type Answer = { error: string | null; address?: unknown };
function lookUp(lookup: ReturnType<typeof guardedLookup>, host: string, answers: Answer[]): void {
  lookup(host, { family: 0 }, (error: NodeJS.ErrnoException | null, address: unknown) => answers.push({ error: error?.message ?? null, address }));
}

describe('lookups of webhook hosts', () => {
  it('run two at a time, one per host, so that hosts whose DNS hangs hold two of the threadpool threads at most', () => {
    const slots = new LookupSlots(2);
    const dns = heldResolver();
    const answers: Answer[] = [];
    const lookup = guardedLookup('https:', policy, () => false, slots, dns.resolve);
    // Two deliveries to each of two receivers whose DNS does not answer, then one to a third.
    for (const host of ['hangs-a.example', 'hangs-a.example', 'hangs-b.example', 'hangs-b.example', 'ok.example']) lookUp(lookup, host, answers);
    expect(dns.asked).toEqual(['hangs-a.example', 'hangs-b.example']);
    expect({ running: slots.running, queued: slots.queued }).toEqual({ running: 2, queued: 3 });
    // One hanging lookup returns at last: the next turn goes to the first waiting host not being looked up.
    dns.answer('hangs-a.example', [{ address: '8.8.8.8', family: 4 }]);
    expect(answers).toEqual([{ error: null, address: '8.8.8.8' }]);
    expect(dns.asked).toEqual(['hangs-a.example', 'hangs-b.example', 'hangs-a.example']);
    dns.answer('hangs-a.example', [{ address: '8.8.8.8', family: 4 }]);
    expect(dns.asked).toEqual(['hangs-a.example', 'hangs-b.example', 'hangs-a.example', 'ok.example']);
    dns.answer('ok.example', [{ address: '1.1.1.1', family: 4 }]);
    dns.answer('hangs-b.example', [{ address: '8.8.4.4', family: 4 }]);
    dns.answer('hangs-b.example', [{ address: '8.8.4.4', family: 4 }]);
    expect(answers.map((a) => a.address)).toEqual(['8.8.8.8', '8.8.8.8', '1.1.1.1', '8.8.4.4', '8.8.4.4']);
    expect({ running: slots.running, queued: slots.queued }).toEqual({ running: 0, queued: 0 });
  });

  it('are not made for a delivery that ended while its lookup waited, and a failed lookup gives its turn back', () => {
    const slots = new LookupSlots(1);
    const dns = heldResolver();
    const answers: Answer[] = [];
    let ended = false;
    lookUp(guardedLookup('https:', policy, () => false, slots, dns.resolve), 'hangs.example', answers);
    lookUp(guardedLookup('https:', policy, () => ended, slots, dns.resolve), 'later.example', answers);
    lookUp(guardedLookup('https:', policy, () => false, slots, dns.resolve), 'refused.example', answers);
    // The second delivery's timeout ends it while it waits.
    ended = true;
    dns.answer('hangs.example', [{ address: '8.8.8.8', family: 4 }]);
    expect(dns.asked).toEqual(['hangs.example', 'refused.example']);
    // An internal address is refused, as before; the turn is given back either way.
    dns.answer('refused.example', [{ address: '10.0.0.5', family: 4 }]);
    expect(answers).toEqual([
      { error: null, address: '8.8.8.8' },
      { error: expect.stringMatching(/^refused: /) as unknown as string, address: '' },
    ]);
    expect({ running: slots.running, queued: slots.queued }).toEqual({ running: 0, queued: 0 });
    const throwing: Resolve = () => {
      throw new TypeError('bad hostname');
    };
    lookUp(guardedLookup('https:', policy, () => false, slots, throwing), 'bad.example', answers);
    expect(answers.at(-1)).toEqual({ error: 'bad hostname', address: '' });
    expect(slots.running).toBe(0);
  });
});
