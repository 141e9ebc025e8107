import type { LoggerService } from '@nestjs/common';
import type { Logger } from 'pino';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** A stack trace as Nest's exception handlers pass it: `error(message, stack, context)`. */
const STACK = /\n\s*at /;

/**
 * Nest's logger interface on pino: the framework's and the application's log lines are
 * JSON lines like the request lines, with the Nest context as `context`.
 */
export class AppLogger implements LoggerService {
  constructor(private readonly root: Logger) {}

  /**
   * A line of its own fields at `info` (a request answered before the application): the
   * client's error, logged as the application's 4xx request lines are. At `warn`, every scanner's
   * malformed request filled the stream an operator watches for the service's own trouble.
   */
  infoFields(fields: object, message: string): void {
    this.root.info(fields, message);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    const logger = this.root;
    if (!logger.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    // Nest passes the context last (`log(message, context)`, `error(message, stack, context)`).
    let rest = params;
    if (rest.length > 0) {
      fields.context = rest[rest.length - 1];
      rest = rest.slice(0, -1);
    }
    if (message instanceof Error) {
      fields.err = message;
      logger[level](fields, message.message);
    } else if (typeof message === 'object' && message !== null) {
      logger[level]({ ...fields, ...message });
    } else if (level === 'error' && rest.length === 1 && typeof rest[0] === 'string' && STACK.test(rest[0])) {
      const err = new Error(String(message));
      err.stack = rest[0];
      logger[level]({ ...fields, err }, String(message));
    } else {
      logger[level](fields, String(message), ...rest);
    }
  }
}
