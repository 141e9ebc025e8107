import { randomUUID } from 'node:crypto';
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { nothing, putAhead, type Middleware } from './lane.js';
import { loggableUrl, withoutCredentials } from './loggable-url.js';
import { routeSpelling, unescapeUnreserved } from './path-escapes.js';
import { NO_STORE_HEADERS, oauthErrorBody } from './oauth-error.js';
import { authorizationCount, REPEATED_AUTHORIZATION } from './repeated-authorization.js';
import { repeatedParameter } from './media-parameters.js';
import { newInstance, PROBLEM_CONTENT_TYPE, statusTitle } from './problem.js';

/** The answer to a request line of an HTTP version the service does not speak (RFC 9110 §15.6.6). */
const VERSION_NOT_SUPPORTED = { status: 505, detail: 'The HTTP version of the request is not supported: send HTTP/1.1.' };

/** A request line, up to its version, that is well-formed but names a version Node's parser does not know (HTTP/1.2, HTTP/3.0). */
const UNKNOWN_VERSION_LINE = /^[!-~]+ [!-~]+ HTTP\/\d\.\d$/;

/**
 * Whether the parser stopped at the end of a well-formed version it does not know: `raw` is
 * the chunk it was reading (pipelined requests before the refused one included), `parsed` how
 * far into it it got. The refused request line is the one `parsed` is in; the version must end
 * there (HTTP/1.10 stops the parser at its last digit: no version, a 400).
 */
function unknownVersion(raw: Buffer | undefined, parsed: number | undefined): boolean {
  if (raw === undefined || parsed === undefined || parsed < 1 || parsed > raw.length) return false;
  const next = raw[parsed];
  if (next !== undefined && next !== 0x0d && next !== 0x0a) return false;
  const start = lineStart(raw, parsed);
  return parsed - start <= 16 * 1024 && UNKNOWN_VERSION_LINE.test(raw.toString('latin1', start, parsed));
}

/** A request line whose method is a token (RFC 9110 §9.1) and whose version is one the service speaks: its method alone is unknown. */
const UNKNOWN_METHOD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}) [!-~]+ HTTP\/1\.[01]\r?$/;

/** A request line read up to inside its target: a method, one space, and no second one yet. */
const TARGET_SO_FAR = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64} [!-~]*$/;

/** Where the line holding byte `parsed` of `raw` starts (0 when no line ends before it in the chunk). */
function lineStart(raw: Buffer, parsed: number): number {
  return parsed < 1 ? 0 : raw.lastIndexOf(0x0a, parsed - 1) + 1;
}

/**
 * The method of a well-formed request line that Node's parser refused for its method alone
 * (`FOO`, `get`: methods are case-sensitive): a 501 (RFC 9110 §9.1), where bytes that are no
 * request line at all (a TLS handshake sent to the plain port) stay a 400.
 */
function unknownMethod(raw: Buffer | undefined, parsed: number | undefined): string | undefined {
  if (raw === undefined || parsed === undefined || parsed < 0 || parsed > raw.length) return undefined;
  const start = lineStart(raw, parsed);
  const end = raw.indexOf(0x0a, start);
  if (end < 0 || end - start > 16 * 1024) return undefined;
  return UNKNOWN_METHOD_LINE.exec(raw.toString('latin1', start, end))?.[1];
}

/**
 * Whether the parser ran out of room inside the request target, the request line still
 * unfinished where it stopped: a 414 (RFC 9112 §3), not a 431. Only when the chunk holds the
 * line's start; a line that began in an earlier chunk cannot be told from a header's value and
 * stays a 431.
 */
function targetTooLong(raw: Buffer | undefined, parsed: number | undefined, connectionBytes: number | undefined): boolean {
  if (raw === undefined || parsed === undefined || parsed < 1 || parsed > raw.length) return false;
  const start = lineStart(raw, parsed);
  // A line starts after a line feed, or at the connection's first byte; the first byte of a
  // later read may be inside a header's value (`foo bar…`), which would look like a method and
  // a target. A header line cannot match: its name ends in a colon, which no method holds.
  if (start === 0 && connectionBytes !== raw.length) return false;
  return TARGET_SO_FAR.test(raw.toString('latin1', start, parsed));
}

/** What Node's HTTP parser refuses, by its error code (and where in the bytes it stopped), and what the problem says of it. */
function refusal(code: string | undefined, raw?: Buffer, parsed?: number, connectionBytes?: number): { status: number; detail: string } {
  if (code === 'HPE_INVALID_VERSION' && unknownVersion(raw, parsed)) return VERSION_NOT_SUPPORTED;
  // HTTP/2's connection preface (`PRI * HTTP/2.0`), sent by a client with prior knowledge.
  if (code === 'HPE_PAUSED_H2_UPGRADE') return VERSION_NOT_SUPPORTED;
  if (code === 'HPE_INVALID_METHOD') {
    const method = unknownMethod(raw, parsed);
    // Quoted as answers quote what a request sent: a credential by its form as [redacted].
    if (method !== undefined) return { status: 501, detail: `The method '${withoutCredentials(method)}' is not one the service implements.` };
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    if (targetTooLong(raw, parsed, connectionBytes)) return { status: 414, detail: 'The request target is longer than the service accepts (16 KiB with the headers).' };
    return { status: 431, detail: 'The request line and headers are larger than the service accepts (16 KiB).' };
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, detail: 'The request was not received in time.' };
  return { status: 400, detail: 'The request is not well-formed HTTP/1.1.' };
}

/**
 * A Host header's value (RFC 9110 §7.2): uri-host [ ":" port ] of RFC 3986, where uri-host is
 * an IP literal in brackets or a reg-name (which an IPv4 address also is, and which may be empty).
 */
const HOST = /^(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[\w\-.~!$&'()*+,;=:]+)\]|[\w\-.~!$&'()*+,;=%]*)(?::[0-9]*)?$/;

/**
 * Headers the request may carry once only, and what the refusal says: Host (RFC 9112 §3.2),
 * and those that say how to read the body. Node keeps the first Content-Type and drops the
 * others, and joins two Content-Encodings into a list: a proxy in front may read the body as
 * the other one says, so the request is refused rather than read one way of two.
 */
const SINGLE_HEADERS: readonly { name: string; detail: string }[] = [
  { name: 'host', detail: 'The request has more than one Host header; it must have one.' },
  { name: 'content-type', detail: 'The request has more than one Content-Type header; it may have one.' },
  { name: 'content-encoding', detail: 'The request has more than one Content-Encoding header; it may have one.' },
];

/** The refusal of the first header of SINGLE_HEADERS the request repeats, if any. */
function repeatedHeader(raw: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return SINGLE_HEADERS.find(({ name }) => (counts.get(name) ?? 0) > 1)?.detail;
}

/**
 * A request target in absolute form (RFC 9112 §3.2.2), `http://host/path?query` as a client
 * speaking to a proxy sends it: its scheme, its authority and the rest (path and query).
 */
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?]*)(.*)$/s;

/** What is wrong with a target in absolute form, if anything: it names a resource of this service only as an http(s) URL without userinfo. */
function absoluteFormProblem(url: string): string | undefined {
  if (url.startsWith('/')) return undefined;
  const absolute = ABSOLUTE_FORM.exec(url);
  if (absolute === null) return undefined;
  const [, scheme, authority] = absolute;
  if (!/^https?$/i.test(scheme)) return `The request target is a URL of the scheme '${withoutCredentials(scheme)}': send a path, or an http or https URL.`;
  // RFC 9110 §4.2.4: userinfo in an http(s) URL is to be treated as an error.
  if (authority.includes('@')) return 'The request target holds a user name or password before its host, which a request does not carry: leave them out.';
  return undefined;
}

/** The target as a path and query: an http(s) URL without its scheme and host, its empty path `/` (RFC 9110 §4.2.3). */
function originForm(url: string): string {
  if (url.startsWith('/')) return url;
  const absolute = ABSOLUTE_FORM.exec(url);
  if (absolute === null) return url;
  const rest = absolute[3];
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** An answer made before the application, with what its log line says of it. */
interface EarlyAnswer {
  body: string;
  headers: Record<string, string>;
  /** The problem's instance, when it is one. */
  instance?: string;
}

/**
 * Writes the line of an answer made before the application (its request id and instance, quoted
 * by a partner, find it), and counts it by `status`.
 */
export type EarlyAnswerLog = (fields: object, message: string, status: number) => void;

/** An answer made before the application: its body and headers; the connection closes after it (a body the request may carry is never read). */
function earlyAnswer(json: object, contentType: string, cache: Readonly<Record<string, string>>): EarlyAnswer {
  const body = JSON.stringify(json);
  const headers = {
    'Content-Type': `${contentType}; charset=utf-8`,
    'Content-Length': String(Buffer.byteLength(body)),
    ...cache,
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': randomUUID(),
    Connection: 'close',
  };
  return { body, headers };
}

/** A problem answered before the application; a 400 lists what the request broke, as every 400 does. */
function earlyProblem(status: number, detail: string): EarlyAnswer {
  const instance = newInstance();
  const problem = { title: statusTitle(status), status, detail, instance, ...(status === 400 ? { errors: [detail] } : {}) };
  return { ...earlyAnswer(problem, PROBLEM_CONTENT_TYPE, { 'Cache-Control': 'no-store' }), instance };
}

/** The token endpoint's form of an early refusal: OAuth JSON, not cacheable. */
function earlyOAuthError(description: string): EarlyAnswer {
  return earlyAnswer(oauthErrorBody('invalid_request', description), 'application/json', NO_STORE_HEADERS);
}

/**
 * Whether a request's target is the token endpoint, however its path is spelt (`/Connect/Token/`,
 * `/%63onnect/token`, an http URL): every answer it gets is OAuth's form (RFC 6749 §5.2).
 */
function forTokenEndpoint(url: string | undefined, tokenPath: string): boolean {
  if (url === undefined || absoluteFormProblem(url) !== undefined) return false;
  return routeSpelling(unescapeUnreserved(originForm(url)).split(/[?#]/)[0]) === tokenPath;
}

/** An early refusal of a request for `url`: OAuth JSON for the token endpoint, a problem for any other. */
function earlyRefusal(status: number, detail: string, url: string | undefined, tokenPath: string): EarlyAnswer {
  return forTokenEndpoint(url, tokenPath) ? earlyOAuthError(detail) : earlyProblem(status, detail);
}

function answer(res: ServerResponse, status: number, problem: EarlyAnswer, log: EarlyAnswerLog, req: IncomingMessage, detail: string): void {
  res.writeHead(status, problem.headers);
  res.end(problem.body);
  log(lineOf(status, problem, detail, req), 'request refused before the application', status);
}

/**
 * Writes an early answer straight to a connection no response object stands for, and ends it,
 * dated as Node dates its responses (RFC 9110 §6.6.1); `sent` runs once it is all written.
 */
function writeRaw(socket: Duplex, status: number, answer: EarlyAnswer, sent?: () => void): void {
  const lines = Object.entries({ Date: new Date().toUTCString(), ...answer.headers }).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(`HTTP/1.1 ${status} ${statusTitle(status)}\r\n${lines.join('')}\r\n${answer.body}`, (error?: Error | null) => {
    if (!error) sent?.();
  });
}

/** The log line of an early answer: its ids, its status and why, and the request as far as it was read. */
function lineOf(status: number, problem: EarlyAnswer, detail: string, req?: IncomingMessage): object {
  return {
    problemInstance: problem.instance,
    req: { id: problem.headers['X-Request-Id'], ...(req ? { method: req.method === undefined ? undefined : withoutCredentials(req.method), url: loggableUrl(req.url ?? '') } : {}) },
    res: { statusCode: status },
    detail,
  };
}

/** Whether Node's parser takes the request as asking to upgrade: Upgrade with `upgrade` among the Connection options. */
function asksUpgrade(req: IncomingMessage): boolean {
  return req.headers.upgrade !== undefined && /(?:^|,)[ \t]*upgrade[ \t]*(?:,|$)/i.test(req.headers.connection ?? '');
}

/**
 * What makes a request's head one the service does not read on (Node's parser lets these
 * through): Host missing, repeated or no host; Content-Type or Content-Encoding repeated, or a
 * Content-Type naming a parameter twice; a Transfer-Encoding HTTP/1.0 cannot have, that
 * does not end in chunked or that has a coding before it; a fragment in the target.
 */
function malformedHead(req: IncomingMessage): { status: number; detail: string } | undefined {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) return refusal(undefined);
  const repeated = repeatedHeader(req.rawHeaders);
  if (repeated !== undefined) return { status: 400, detail: repeated };
  // A Content-Type naming a parameter twice (`charset=utf-8; charset=utf-16`): parsers differ
  // in which one they take, the service's own and a proxy's alike.
  const parameter = repeatedParameter('Content-Type', req.headers['content-type'] ?? '');
  if (parameter !== undefined) return { status: 400, detail: `The request's Content-Type ${parameter}: send each once.` };
  // A Host that is no host and port (RFC 9112 §3.2: a 400): spaces, a path, userinfo.
  if (req.headers.host !== undefined && !HOST.test(req.headers.host)) {
    return { status: 400, detail: 'The request\'s Host header is not a host name or address with an optional port.' };
  }
  // HTTP/1.0 has no Transfer-Encoding: a request carrying one has faulty framing, whatever
  // its other headers say (RFC 9112 §6.1), and the connection closes after the answer.
  if (req.httpVersionMinor === 0 && req.headers['transfer-encoding'] !== undefined) {
    return { status: 400, detail: 'An HTTP/1.0 request cannot carry Transfer-Encoding: send its body with Content-Length.' };
  }
  // A request's Transfer-Encoding must end in chunked (RFC 9112 §6.3): its body has no
  // framing otherwise. Node's parser finds that out only when the body comes, by which time
  // the application has the request: it is refused here, before the application sees it.
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined && !/(?:^|,)[ \t]*chunked[ \t]*$/i.test(coding)) return refusal(undefined);
  // A coding before chunked (gzip, chunked) would have its bytes taken as the body: one
  // the service does not apply is a 501 (RFC 9112 §6.1).
  if (coding !== undefined && !/^[ \t]*chunked[ \t]*$/i.test(coding)) {
    return { status: 501, detail: 'The request has a transfer coding the service does not apply: send its body with Transfer-Encoding: chunked alone, or with Content-Length.' };
  }
  // A URL for a target (as to a proxy) is read as its path and query, when it is one the
  // service could be meant by: not another scheme's, nor one with a user name and password.
  const absolute = req.url === undefined ? undefined : absoluteFormProblem(req.url);
  if (absolute !== undefined) return { status: 400, detail: absolute };
  // The asterisk form names the server, not a resource: OPTIONS's alone (RFC 9112 §3.2.4).
  if (req.url === '*' && req.method !== 'OPTIONS') {
    return { status: 400, detail: "The request target '*' is for OPTIONS alone: name a path." };
  }
  // A fragment is the client's, never sent (RFC 9112 §3.2): a raw '#' in the target would
  // be read as part of the path by one parser and as the fragment's start by another.
  if (req.url?.includes('#')) {
    return { status: 400, detail: "The request target holds '#', which a request does not carry: leave the fragment out, and send '#' in a value as %23." };
  }
  return undefined;
}

/**
 * Answers a request that Node's HTTP parser refuses (headers too large, a malformed header
 * line, conflicting Content-Length and Transfer-Encoding, a request too slow to arrive) with
 * a problem document, as every other error is answered, instead of Node's bare status line;
 * then closes the connection, which can carry nothing more; the same for an HTTP/1.1 request
 * without Host or with two Host headers, and a 417 for an Expect it cannot meet. A request for
 * the token endpoint whose head was read is answered in OAuth's form instead. None of these
 * requests reaches the application; each is logged (`log`, an info line) with its request id and
 * problem instance, so that the ids a partner quotes find it. A request the application was
 * already reading when the parser gave up on it (a body too slow) is logged by its own line.
 * The 417's request was read whole, its Origin too: it carries the CORS headers (`cors`, the
 * middleware Express runs, when CORS is on).
 */
export function answerClientErrors(server: Server, tokenPath: string, log: EarlyAnswerLog, cors: Middleware | null = null): void {
  // An HTTP/1.1 request without Host (RFC 9112 §3.2): a 400 problem, not Node's empty 400.
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
  putAhead(
    server,
    (req, res) => {
      // A request asking to switch protocols (Connection: upgrade with Upgrade: h2c, websocket)
      // is answered in HTTP/1.1, its Upgrade ignored (RFC 9110 §7.8), and the connection closes
      // after it: Node's parser stops reading what came in the same packet after such a request,
      // so a request pipelined behind it would wait unanswered until the idle timeout; closed,
      // the client sends it again on a new connection (RFC 9112 §9.3.2).
      if (asksUpgrade(req)) res.setHeader('Connection', 'close');
      // HTTP/1.0 and HTTP/1.1 are spoken; a request line of another version (HTTP/2.0 in
      // cleartext, HTTP/0.9's line without one) is a 505 (RFC 9110 §15.6.6), not served.
      if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) return VERSION_NOT_SUPPORTED;
      const refused = malformedHead(req);
      if (refused) return refused;
      // One spelling of each path for every route: `/%62ranches` is `/branches`, and
      // `http://host/branches` too.
      if (req.url !== undefined) req.url = unescapeUnreserved(originForm(req.url));
      // Checked where every credential is (see REPEATED_AUTHORIZATION), not answered here.
      if (req.headers.authorization !== undefined && authorizationCount(req.rawHeaders) > 1) req.headers.authorization = REPEATED_AUTHORIZATION;
      return undefined;
    },
    (req, res, { status, detail }) => {
      answer(res, status, earlyRefusal(status, detail, req.url, tokenPath), log, req, detail);
      return Promise.resolve(true);
    },
  );
  // An Expect other than 100-continue (RFC 9110 §10.1.1): a 417 problem instead of Node's empty answer.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    // A credential by its form as [redacted], as any answer quotes it: redacted whole, then cut (cut first, it may no longer have a credential's form).
    const detail = `The expectation '${withoutCredentials(String(req.headers.expect)).slice(0, 100)}' cannot be met; only 100-continue is supported.`;
    // A preflight (OPTIONS) is the CORS middleware's own answer, not a header to add.
    if (cors !== null && req.method !== 'OPTIONS') cors(req, res, nothing);
    answer(res, 417, earlyRefusal(417, detail, req.url, tokenPath), log, req, detail);
  });
  // CONNECT asks for a tunnel, which no endpoint gives: Node would close the connection without a word.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const detail = 'CONNECT is not supported: the service is no proxy.';
    const problem = earlyProblem(501, detail);
    socket.on('error', () => undefined);
    writeRaw(socket, 501, problem);
    log(lineOf(501, problem, detail, req), 'request refused before the application', 501);
  });
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number }, socket: Duplex) => {
    if (refused.has(socket)) {
      // Refused before: what follows is not read. Once the refusal is written, the connection goes.
      if (!socket.writable) socket.destroy();
      return;
    }
    const pending = (socket as AnsweringSocket)._httpMessage;
    if (error.code === 'HPE_CLOSED_CONNECTION') {
      // Bytes after a request that said `Connection: close` (RFC 9112 §9.6): they are not read,
      // and the answer to that request goes out before the connection closes, as it would anyway.
      if (!pending) socket.end();
      return;
    }
    // The request whose body the parser was reading, if the refusal is about it (a chunk that
    // is no chunk, a body too slow to arrive): it has a response of its own, maybe queued.
    const incoming = (socket as AnsweringSocket).parser?.incoming;
    const reading = incoming !== null && incoming !== undefined && !incoming.complete ? incoming : undefined;
    const own = pending instanceof ServerResponse && reading !== undefined && pending.req === reading;
    // A request whose response has gone out already (or is going out) gets no second one: a
    // client would take that for the answer to its next request. Once finished, the response
    // is no longer the connection's, though the parser still reads its request's body.
    const answered = reading !== undefined && (own ? pending.headersSent : !pending);
    if (error.code === 'ECONNRESET' || !socket.writable || answered) {
      socket.destroy();
      return;
    }
    const { status, detail } = refusal(error.code, error.rawPacket, error.bytesParsed, (socket as AnsweringSocket).bytesRead);
    // A request whose head was read (its body refused, or too slow) is answered in its
    // endpoint's form; one whose head the parser could not read names no endpoint.
    const problem = earlyRefusal(status, detail, reading?.url, tokenPath);
    if (reading !== undefined || error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      // Refused now: the request is the application's already, or the connection too slow to
      // wait on (after a timeout the parser would read on and hand later requests over).
      const locals = own ? ((pending as ServerResponse & { locals?: Record<string, unknown> }).locals ??= {}) : undefined;
      // Once all of it went out, the refusal is the request's whole answer (see whenEnded), not
      // an abort; unless the client closed its side before its body ended (EOF), which says it
      // left: the answer then meets a closed client.
      const answered = locals && error.code !== 'HPE_INVALID_EOF_STATE' ? () => (locals.answeredOnSocket = true) : undefined;
      writeRaw(socket, status, problem, answered);
      if (own && locals) {
        // A request the application was reading: its own line says how it ended, with this
        // status and instance rather than the 200 it had not yet changed.
        pending.statusCode = status;
        locals.problemInstance = problem.instance;
        // Written on the socket, not through the response: what the line says was sent.
        locals.writtenStatus = status;
      } else {
        log(lineOf(status, problem, detail), 'request refused before the application', status);
      }
      return;
    }
    // The head of a new request, refused before the application had it: the parser reads no
    // further. Pipelined behind others (RFC 9112 §9.3.2), its refusal follows their answers,
    // which a client matches to its requests by their order.
    refused.add(socket);
    afterEarlierAnswers(socket, () => {
      if (socket.writable) writeRaw(socket, status, problem);
      else socket.destroy();
    });
    log(lineOf(status, problem, detail), 'request refused before the application', status);
  });
}

/** A connection of the server, with the response Node is writing on it, if any, and its parser's request. */
type AnsweringSocket = Duplex & { _httpMessage?: ServerResponse | null; parser?: { incoming?: IncomingMessage | null } | null; bytesRead?: number };

/** Connections whose last request was refused while answers to earlier ones were still to go. */
const refused = new WeakSet<Duplex>();

/**
 * Runs `then` once the answers to the requests read before on `socket` are sent. Node queues
 * a pipelined request's response until the one before it is finished, and hands it the
 * connection as that one finishes, before this listener runs: the next one is then current.
 */
function afterEarlierAnswers(socket: AnsweringSocket, then: () => void): void {
  const current = socket._httpMessage;
  if (!current) {
    then();
    return;
  }
  // Even when its last byte is written: until its 'finish', Node has not handed the connection on.
  current.once('finish', () => afterEarlierAnswers(socket, then));
}
