import { Logger } from '@nestjs/common';
import { StderrLogger } from './context.js';

describe('StderrLogger', () => {
  it("writes warnings and errors as plain lines on the command's stderr, naming their context, without a stack; nothing else", () => {
    const lines: string[] = [];
    const logger = new StderrLogger({ write: (text: string) => lines.push(text) });
    Logger.overrideLogger(logger);
    try {
      const database = new Logger('Database');
      database.log('connected');
      database.warn('A database connection failed: read ECONNRESET');
      database.error('the statement failed', 'Error: x\n    at y (z.js:1:1)');
      new Logger('Keys').error(new Error('no key'));
    } finally {
      Logger.overrideLogger(new Logger());
    }
    expect(lines).toEqual([
      'warning: [Database] A database connection failed: read ECONNRESET\n',
      'error: [Database] the statement failed\n',
      'error: [Keys] no key\n',
    ]);
  });
});
