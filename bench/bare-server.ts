// The ceiling the service is compared with: a bare node:http server that answers every
// request with the same bytes and headers, whatever the path or request headers.
//
// Usage: node dist-bench/bench/bare-server.js <port> <body file> <content type> [content encoding]
// Listens on 127.0.0.1:<port>. A content encoding (gzip, br) goes into Content-Encoding: the
// body file then holds bytes the service compressed, served as they are.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [port, bodyFile, contentType, contentEncoding] = process.argv.slice(2);
if (!port || !bodyFile || !contentType) {
  process.stderr.write('usage: node bare-server.js <port> <body file> <content type> [content encoding]\n');
  process.exit(64);
}

// Read once: the server then does no work per request beyond writing the bytes.
const body = readFileSync(bodyFile);
const headers: Record<string, string> = { 'Content-Type': contentType, 'Content-Length': String(body.length) };
if (contentEncoding) headers['Content-Encoding'] = contentEncoding;

createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
}).listen(Number(port), '127.0.0.1');
