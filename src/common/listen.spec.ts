import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listen, shownAddress } from './listen.js';

describe('listen', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it('resolves with the address it listens on', async () => {
    const server = createServer();
    servers.push(server);
    const url = await listen(server, 0, '127.0.0.1');
    expect(url).toBe(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    expect(server.listenerCount('error')).toBe(0);
  });

  it('rejects with the error of a port another server holds, leaving no listener behind', async () => {
    const taken = createServer();
    servers.push(taken);
    await listen(taken, 0, '127.0.0.1');
    const { port } = taken.address() as AddressInfo;
    const second = createServer();
    await expect(listen(second, port, '127.0.0.1')).rejects.toMatchObject({ code: 'EADDRINUSE', syscall: 'listen', port });
    expect(second.listening).toBe(false);
  });

  it('shows the any-address as the loopback one, and IPv6 addresses in brackets', () => {
    expect(shownAddress({ family: 'IPv4', address: '0.0.0.0', port: 3000 })).toBe('http://127.0.0.1:3000');
    expect(shownAddress({ family: 'IPv4', address: '10.1.2.3', port: 80 })).toBe('http://10.1.2.3:80');
    expect(shownAddress({ family: 'IPv6', address: '::', port: 3000 })).toBe('http://[::1]:3000');
    expect(shownAddress({ family: 'IPv6', address: '::1', port: 8080 })).toBe('http://[::1]:8080');
  });
});
