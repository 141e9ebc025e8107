// The ceiling the service is compared with: a bare node:http server that answers every
// request with the same bytes and content type, whatever the path or headers.
//
// Usage: node bench/bare-server.mjs <body file> <content type>
// Prints one JSON line {"port": n} once it listens on 127.0.0.1 (on a free port).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [bodyFile, contentType] = process.argv.slice(2);
if (!bodyFile || !contentType) {
  process.stderr.write('usage: node bench/bare-server.mjs <body file> <content type>\n');
  process.exit(64);
}

// Read once: the server then does no work per request beyond writing the bytes.
const body = readFileSync(bodyFile);
const headers = { 'Content-Type': contentType, 'Content-Length': String(body.length) };

const server = createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});
