import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** Node's response fields for `Expect: 100-continue`: whether the client asked, and whether the 100 went out. */
interface ContinueState {
  _expect_continue?: boolean;
  _sent100?: boolean;
}

/** Requests whose body will not be asked for, whatever reads it later (a drain after the refusal). */
const declined = new WeakSet<IncomingMessage>();

/**
 * Answers `Expect: 100-continue` (RFC 9110 §10.1.1) when the request's body is first read, not
 * when its head arrives, as Node does by default. A request refused before its body is read (a
 * wrong API key, an expired token, a rate limit, a declared length over the limit) then gets
 * its final answer without a 100, and the client does not send a body that would be thrown
 * away; Node closes the connection after such an answer, since the client may still send it.
 *
 * Every reader of a body (the body parsers, the upload's multipart reader, a drain) reads
 * through the stream's `_read`, which asks the socket for more: the 100 is written on its
 * first call, unless the answer has begun or the body was declined.
 *
 * A client may send the body without waiting for the 100 (RFC 9110 §10.1.1 allows it). Once the
 * whole body has arrived, the expectation is over: no 100 is due, and the connection stays open
 * for the next request. Node would close it, since its final answer came without a 100 (and a
 * body that arrived whole with the head is never read through `_read`, so none was written).
 */
export function continueOnRead(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    // Node takes any field that holds the word (`100-continue, foo`, `foo-100-continue`) as
    // asking for a 100; an expectation beside it, or another spelling, cannot be met: a 417.
    if (!onlyContinue(req.headers.expect)) {
      server.emit('checkExpectation', req, res);
      return;
    }
    // A setter that keeps the rule: an assignment by Node (none in its versions so far) would otherwise throw.
    Object.defineProperty(res, '_expect_continue', { configurable: true, get: () => !req.complete, set: () => undefined });
    req._read = (size: number): void => {
      // Node's own _read from now on.
      delete (req as Partial<IncomingMessage>)._read;
      if (awaitsContinue(res) && !declined.has(req)) res.writeContinue();
      req._read(size);
    };
    server.emit('request', req, res);
  });
}

/** Whether an Expect field asks for 100-continue and nothing else (RFC 9110 §10.1.1; empty members allowed, the name in any case). */
export function onlyContinue(field: string | undefined): boolean {
  const members = (field ?? '').split(',').map((member) => member.trim()).filter((member) => member !== '');
  return members.length > 0 && members.every((member) => member.toLowerCase() === '100-continue');
}

/** Whether the client is waiting for a 100 Continue before it sends the body: then the body is not coming unless it is asked for. */
export function awaitsContinue(res: ServerResponse): boolean {
  const state = res as ServerResponse & ContinueState;
  return state._expect_continue === true && state._sent100 !== true && !res.headersSent;
}

/** The request's body will not be asked for: what reads it from now on (a drain after a refusal) sends no 100. */
export function declineContinue(req: IncomingMessage): void {
  declined.add(req);
}
