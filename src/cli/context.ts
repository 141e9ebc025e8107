import { existsSync } from 'node:fs';
import { inspect } from 'node:util';
import { join, resolve } from 'node:path';
import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { AppModule } from '../app.module.js';
import { inFileOrder, type ImportReport } from '../common/import-report.js';
import { assertKeyCheck, assertZoneCheck } from '../database/setting-checks.js';
import { OperatorError } from '../common/operator-error.js';
import { loadConfig, type AppConfig } from '../config/app-config.js';
import { prepareDataDir, SQLITE_FILE } from '../database/data-source-options.js';
import { openDataSource, prepareSchema } from '../database/migration-tools.js';
import { ID_MAX } from '../common/query-fields.js';
import { prepareImageFolder } from '../menus/image-storage.js';

/** How long a command's statement may run, and on SQLite a write wait for the lock: 10 minutes, unless DATABASE_QUERY_TIMEOUT_MS is longer. */
const BATCH_QUERY_TIMEOUT_MS = 600_000;

/** A stream the CLI writes to: the process's own, or a test's buffer. */
export interface CliStream {
  /** `done` is called once the text is written, with the error when it could not be. */
  write(text: string, done?: (error?: Error | null) => void): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Everything a run of the CLI reads from or writes to outside itself. */
export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: CliStream;
  stderr: CliStream;
}

/** Output of one command: JSON with --json, else the human lines. */
export interface Output {
  json: unknown;
  text: string;
  /** Exit code; 1 when an import refused records. */
  code?: number;
  /** Already written (see CliContext.printOnce). */
  printed?: boolean;
}

/**
 * The command's output could not be written (a full disk, a closed pipe) after it made
 * something it shows once: that was taken back, or is said to be lost.
 */
export class OutputFailure extends Error {}

/**
 * The state of one run of the CLI: where its output goes, whether it is JSON, and its exit
 * code. Each run has its own, so runs in one process never see each other's.
 */
export class CliContext {
  json: boolean;
  exitCode = 0;

  constructor(
    readonly io: CliIo,
    argv: readonly string[],
  ) {
    // Known before commander has parsed anything, so a refused option still answers in JSON.
    this.json = argv.includes('--json');
  }

  /**
   * An import file named on the command line, as an absolute path: relative to the folder the
   * command was typed in. `npm run cli` runs it in the project's folder, and says in INIT_CWD
   * where npm was started: a file named there relative to a subfolder was looked for in the
   * project's folder (not found, or another file of that name imported).
   */
  file(name: string): string {
    const typedIn = this.io.env.npm_lifecycle_event === 'cli' ? this.io.env.INIT_CWD : undefined;
    return resolve(typedIn || process.cwd(), name);
  }

  config(): AppConfig {
    const config = loadConfig(this.io.env);
    // A command is batch work: an import's statement may take longer than a request may wait,
    // and on SQLite its writes wait their turn behind other imports and the service.
    config.DATABASE_QUERY_TIMEOUT_MS = Math.max(config.DATABASE_QUERY_TIMEOUT_MS, BATCH_QUERY_TIMEOUT_MS);
    return config;
  }

  emit(output: Output): void {
    if (!output.printed) this.io.stdout.write(this.text(output));
    this.exitCode = output.code ?? 0;
  }

  private text(output: Output): string {
    return this.json ? `${JSON.stringify(output.json, null, 2)}\n` : `${output.text}\n`;
  }

  /**
   * Writes output that shows a secret once, and waits until it is written. When it cannot be
   * (a full disk, a reader gone), `takeBack` undoes what was made, since a secret nobody saw
   * must not stay usable, and the command fails saying so (`lost`: what is left to do instead,
   * when nothing can be taken back).
   */
  async printOnce(output: Output, takeBack: (() => Promise<void>) | { lost: string }): Promise<Output> {
    const error = await writeChecked(this.io.stdout, this.text(output));
    if (error === undefined) return { ...output, printed: true };
    if (typeof takeBack === 'function') {
      await takeBack();
      throw new OutputFailure(`cannot write the output (${error.message}): what it would have shown once was taken back; nothing was made`);
    }
    throw new OutputFailure(`cannot write the output (${error.message}): ${takeBack.lost}`);
  }

  /** A commander action that prints what `run` returns. */
  action<A extends unknown[]>(run: (...args: A) => Promise<Output>): (...args: A) => Promise<void> {
    return async (...args: A) => this.emit(await run(...args));
  }

  /**
   * Runs `use` in the service's application context (no HTTP listener), closed afterwards in every case.
   * `writesSecrets`: the command issues or seals a key or secret under API_KEY_HASH_KEY (or
   * judges stored ones by it), and is refused before it writes when that is not the value the
   * database's are stored under (see
   * src/database/setting-checks.ts). `writesLocalTimes`: it dates the visits it writes by now in
   * RESULTS_TIMEZONE, and is refused before it writes when the service runs with another zone.
   */
  async withApp<T>(use: (app: INestApplicationContext) => Promise<T>, options: { writesSecrets?: boolean; writesLocalTimes?: boolean } = {}): Promise<T> {
    const config = this.config();
    // The PostgreSQL schema exists, or is created when migrations run at start: else one line naming it.
    // A schema made here, as the service would make it: said, since a mistyped DATABASE_SCHEMA is the likelier cause.
    if ((await prepareSchema(config)) === 'made') this.noteNewSchema(config.DATABASE_SCHEMA);
    // The folders the settings name, checked as the service checks them at start (before the application, which would log a stack).
    const made = this.newDatabase(config);
    prepareDataDir(config);
    prepareImageFolder(config);
    // What the context created so far, to close it when the start itself fails (the context is not returned then).
    const created: unknown[] = [];
    let app: INestApplicationContext;
    try {
      app = await NestFactory.createApplicationContext(AppModule.forRoot(config), {
        // Warnings and errors as plain lines on stderr: stdout holds the command's output alone (`--json` is JSON only).
        logger: new StderrLogger(this.io.stderr),
        // Rethrow instead of ending the process: the CLI reports the error and sets the exit code.
        abortOnError: false,
        instrument: { instanceDecorator: (instance: unknown) => (created.push(instance), instance) },
      });
    } catch (error) {
      await closeCreated(created);
      throw error;
    }
    this.noteNewDatabase(made);
    try {
      if (options.writesSecrets) await assertKeyCheck(app.get(DataSource), config);
      if (options.writesLocalTimes) await assertZoneCheck(app.get(DataSource), config);
      return await use(app);
    } finally {
      await app.close();
    }
  }

  private noteNewSchema(schema: string): void {
    this.io.stderr.write(`note: there was no schema "${schema}" in the database; a new, empty one is made (is DATABASE_SCHEMA right?)\n`);
  }

  /** The embedded database's file when there is none yet (opening it makes it, as the service does), else null. */
  private newDatabase(config: AppConfig): string | null {
    const sqlite = config.DATABASE_URL ? null : join(resolve(config.DATA_DIR), SQLITE_FILE);
    return sqlite && !existsSync(sqlite) ? sqlite : null;
  }

  /** Said once the database was made, since a wrong DATA_DIR is the likelier cause. */
  private noteNewDatabase(sqlite: string | null): void {
    if (sqlite) this.io.stderr.write(`note: there was no database at ${sqlite}; a new, empty one was made (is DATA_DIR right?)\n`);
  }

  /** Runs `use` with a data source for migration commands, destroyed afterwards in every case. */
  async withDataSource<T>(use: (db: DataSource) => Promise<T>, options: { noteNewDatabase?: boolean } = {}): Promise<T> {
    const config = this.config();
    const made = (options.noteNewDatabase ?? true) ? this.newDatabase(config) : null;
    prepareDataDir(config);
    const db = await openDataSource(config);
    this.noteNewDatabase(made);
    try {
      return await use(db);
    } finally {
      await db.destroy();
    }
  }
}

/** Writes `text`, resolving to the error when it could not be written (a stream that takes a callback says so through it). */
function writeChecked(stream: CliStream, text: string): Promise<Error | undefined> {
  return new Promise((resolve) => {
    try {
      stream.write(text, (error) => resolve(error ?? undefined));
    } catch (error) {
      resolve(error instanceof Error ? error : new Error(String(error)));
    }
  });
}

/** Closes the connections of a context whose start failed. */
async function closeCreated(instances: unknown[]): Promise<void> {
  for (const instance of instances.reverse()) {
    if (instance instanceof DataSource && instance.isInitialized) await instance.destroy().catch(() => undefined);
    if (instance instanceof Redis) instance.disconnect();
  }
}

/** An id option: an integer from 1 to ID_MAX, as the API's parameters take them (a larger one could never be asked for). */
export function positiveInt(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) <= 0) {
      throw new OperatorError(`${name} must be an integer greater than 0: '${value}'`);
    }
    if (Number(value) > ID_MAX) throw new OperatorError(`${name} must be at most ${ID_MAX}: '${value}'`);
    return Number(value);
  };
}

export function intList(name: string) {
  return (value: string): number[] => value.split(',').map((v) => positiveInt(name)(v.trim()));
}

export const words = (value: string): string[] => value.split(/[\s,]+/).filter(Boolean);

export function importOutput(report: ImportReport): Output {
  const lines = [`${report.file}: imported ${report.imported}, rejected ${report.rejected.length}`];
  // In line order; a message quotes the file's values, shown with their control characters escaped
  // (a value must not drive the operator's terminal, nor forge a line of the report).
  const rejected = [...report.rejected].sort(inFileOrder);
  for (const r of rejected) lines.push(`  line ${r.line}${r.element === undefined ? '' : ` (record ${r.element})`}: ${visible(r.errors.join(' '))}`);
  return { json: report, text: lines.join('\n'), code: report.rejected.length > 0 ? 1 : 0 };
}

/**
 * Text with its control and format characters, and the line and paragraph separators (U+2028,
 * U+2029, which editors and log viewers break lines at), written as escapes (`\u001b`, `\n`),
 * for a terminal.
 */
export function visible(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\u{${c.codePointAt(0)!.toString(16)}}`));
}

/**
 * A name (of a client, brand or credential) as `visible` writes it, its backslashes doubled
 * first: a name holding a backslash and an `n` is then told apart from one holding a newline.
 */
export function visibleName(name: string): string {
  return visible(name.replaceAll('\\', '\\\\'));
}

/** The application's warnings and errors in a command, as `warning: [Context] message` lines on stderr; nothing else. */
export class StderrLogger implements LoggerService {
  constructor(private readonly stderr: CliStream) {}

  log(): void {}

  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warning', message, rest);
  }

  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }

  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }

  /** Nest passes the context last (after an error's stack): the stack is left out, the context named. */
  private write(level: string, message: unknown, rest: unknown[]): void {
    const context = rest.length > 0 && typeof rest[rest.length - 1] === 'string' && !String(rest[rest.length - 1]).includes('\n') ? String(rest[rest.length - 1]) : '';
    const text = message instanceof Error ? message.message : typeof message === 'string' ? message : inspect(message, { breakLength: Infinity, depth: 3 });
    this.stderr.write(`${level}: ${context ? `[${context}] ` : ''}${text}\n`);
  }
}
