import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens as Nest's `app.listen()` does (after `app.init()`), without the error line Nest logs
 * when the port cannot be had: the start reports that in one line of its own (main.ts).
 * Resolves with the address to show, as Nest's `getUrl()` writes it.
 */
export function listen(server: Server, port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(shownAddress(server.address() as AddressInfo));
    });
  });
}

/** `http://host:port`, with the any-address shown as the loopback one, as Nest does. */
export function shownAddress(address: AddressInfo): string {
  if (address.family === 'IPv6') return `http://${address.address === '::' ? '[::1]' : `[${address.address}]`}:${address.port}`;
  return `http://${address.address === '0.0.0.0' ? '127.0.0.1' : address.address}:${address.port}`;
}
