import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * A row as SqliteReaders hands it on: the columns named `bytes` as the stored bytes, the
 * others as better-sqlite3 gives them (integers as numbers: no safeIntegers).
 */
export type ReadRow = Record<string, string | number | Buffer | null>;

/**
 * What a reader thread answers: the rows packed (see unpack) into a slot of the shared memory,
 * or, for a statement whose rows do not fit in a slot, into a buffer of their own, transferred;
 * or why the statement failed.
 */
type Reply =
  | { id: number; columns: string[]; rows: number; slot: number; length: number }
  | { id: number; columns: string[]; rows: number; data: ArrayBuffer }
  | { id: number; error: { message: string; code?: string } };

interface Pending {
  /** Hands the rows of a reply on; runs within the message's handler (see SqliteReaders). */
  consume: (reply: Reply, shared: Buffer) => void;
  fail: (error: Error) => void;
}

interface Reader {
  worker: Worker;
  pending: Map<number, Pending>;
  /** The slots the thread writes rows into, one after the other. */
  shared: Buffer;
  /** Per slot: 1 while the rows written there are not yet handed on, else 0. */
  full: Int32Array;
}

/** What a reader thread is started with. */
interface ReaderData {
  driver: string;
  file: string;
  nativeBinding?: string;
  timeoutMs: number;
  cacheKiB: number;
  shared: SharedArrayBuffer;
  control: SharedArrayBuffer;
  slotBytes: number;
}

/** Slots per thread: one being handed on while the thread writes the next statement's rows into the other. */
const SLOTS = 2;
/** Bytes per slot: a page of 1,000 visits (some 4.2 MB) fits; larger pages come in a buffer of their own. */
const SLOT_BYTES = 8 * 1024 * 1024;

/** Where the reader threads find the driver: this module's own copy of it. */
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Reads on SQLite in threads of their own, each with its own read-only connection to the
 * database file, so that reading a page's documents out of the database (most of the CPU of
 * a page not in the cache) runs beside the event loop instead of on it. better-sqlite3 is
 * synchronous: on the service's connection a read holds every other request of the process
 * for its whole length. With WAL (see data-source-options.ts) readers never wait for the
 * writer, and each statement sees what was committed before it started.
 *
 * A thread writes a statement's rows into a slot of memory it shares with the event loop,
 * where they are handed on, one by one, within the handler of the thread's message; the slot
 * is then given back. No buffer is allocated per statement on either side: a buffer per page
 * passed from thread to thread (the first design) is memory outside V8's heap, which made the
 * event loop's isolate run a full collection every few pages (docs/decisions.md, "Visits").
 * Threads are started on first use; a thread that stops fails the reads it had and is
 * replaced on the next read.
 */
export class SqliteReaders {
  private readonly readers: (Reader | null)[];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly file: string,
    threads: number,
    private readonly options: { nativeBinding?: string; timeoutMs: number; cacheKiB: number },
  ) {
    if (threads < 1) throw new Error('at least one reader thread');
    this.readers = new Array<Reader | null>(threads).fill(null);
  }

  /**
   * Calls `each` with every row of `sql`, in the statement's order. A row's byte columns
   * (`bytes`) are views of memory that is reused once the last row was handed on: `each`
   * copies what it keeps. An exception of `each` ends the read and is what it fails with.
   */
  each<T>(sql: string, params: readonly unknown[], bytes: readonly string[], each: (row: T) => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the database readers are closed'));
    const reader = this.reader();
    const id = this.nextId++;
    const keep = new Set(bytes);
    return new Promise<void>((resolve, reject) => {
      const consume = (reply: Reply, shared: Buffer): void => {
        if ('error' in reply) {
          reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
          return;
        }
        const data = 'data' in reply ? Buffer.from(reply.data) : shared.subarray(reply.slot * SLOT_BYTES, reply.slot * SLOT_BYTES + reply.length);
        try {
          unpack(data, reply.columns, reply.rows, keep, each as (row: ReadRow) => void);
          resolve();
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      };
      if (reader.pending.size === 0) reader.worker.ref();
      reader.pending.set(id, { consume, fail: reject });
      reader.worker.postMessage({ id, sql, params });
    });
  }

  /** Stops the threads; reads under way fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.readers.map(async (reader) => reader && (await reader.worker.terminate())));
    this.readers.fill(null);
  }

  /** The thread with the fewest reads waiting, started if it is not running. */
  private reader(): Reader {
    let index = 0;
    for (let i = 0; i < this.readers.length; i++) {
      const reader = this.readers[i];
      if (reader === null) {
        index = i;
        break;
      }
      if (reader.pending.size < this.readers[index]!.pending.size) index = i;
    }
    return this.readers[index] ?? this.start(index);
  }

  private start(index: number): Reader {
    const shared = new SharedArrayBuffer(SLOTS * SLOT_BYTES);
    const control = new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT);
    const worker = new Worker(`(${readerThread.toString()})()`, {
      eval: true,
      // V8's flags (NODE_OPTIONS, see Dockerfile) hold for the thread's heap too.
      workerData: { driver: DRIVER, file: this.file, ...this.options, shared, control, slotBytes: SLOT_BYTES } satisfies ReaderData,
    });
    const reader: Reader = { worker, pending: new Map(), shared: Buffer.from(shared), full: new Int32Array(control) };
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const waiting = reader.pending.get(reply.id);
      reader.pending.delete(reply.id);
      if (reader.pending.size === 0) worker.unref();
      try {
        waiting?.consume(reply, reader.shared);
      } finally {
        if ('slot' in reply) {
          Atomics.store(reader.full, reply.slot, 0);
          Atomics.notify(reader.full, reply.slot);
        }
      }
    });
    const fail = (error: Error): void => {
      if (this.readers[index] === reader) this.readers[index] = null;
      for (const waiting of reader.pending.values()) waiting.fail(error);
      reader.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the database reader stopped (exit code ${code})`)));
    this.readers[index] = reader;
    return reader;
  }
}

/**
 * Hands on the rows packed in `data`: per row, per column, a tag byte (0 null, 1 a number as
 * a float64, 2 text, 3 bytes), and for texts and bytes a uint32 length and the bytes (UTF-8
 * for texts). Texts of the columns in `bytes` stay bytes.
 */
function unpack(data: Buffer, columns: readonly string[], rows: number, bytes: ReadonlySet<string>, each: (row: ReadRow) => void): void {
  const keep = columns.map((column) => bytes.has(column));
  let at = 0;
  for (let r = 0; r < rows; r++) {
    const row: ReadRow = {};
    for (let c = 0; c < columns.length; c++) {
      const tag = data[at++];
      let value: ReadRow[string];
      if (tag === 0) value = null;
      else if (tag === 1) {
        value = data.readDoubleLE(at);
        at += 8;
      } else {
        const length = data.readUInt32LE(at);
        at += 4;
        value = tag === 3 || keep[c] ? data.subarray(at, at + length) : data.toString('utf8', at, at + length);
        at += length;
      }
      row[columns[c]] = value;
    }
    each(row);
  }
}

/**
 * The reader thread, run from its source text (`eval`), so that it is plain JavaScript
 * whether this module was compiled or is being transpiled: it uses only what it requires
 * itself. Statements are prepared once per text. Rows are written into the next slot once
 * the event loop has given it back (see SqliteReaders), or, when they outgrow it, into a
 * buffer of their own that is transferred.
 */
function readerThread(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const threads = require('node:worker_threads') as typeof import('node:worker_threads');
  const parentPort = threads.parentPort!;
  const workerData = threads.workerData as ReaderData;
  const Database = require(workerData.driver) as typeof import('better-sqlite3');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const db = new Database(workerData.file, {
    readonly: true,
    fileMustExist: true,
    timeout: workerData.timeoutMs,
    nativeBinding: workerData.nativeBinding,
  });
  db.pragma(`cache_size = -${workerData.cacheKiB}`);
  const slotBytes = workerData.slotBytes;
  const shared = Buffer.from(workerData.shared);
  const full = new Int32Array(workerData.control);
  const statements = new Map<string, import('better-sqlite3').Statement>();
  let slot = 0;
  let out: Buffer<ArrayBufferLike> = shared;
  let start = 0;
  let at = 0;
  // Room for `bytes` more: past the slot's end the rows move to a buffer of their own.
  const reserve = (bytes: number): void => {
    if (at + bytes <= (out === shared ? start + slotBytes : out.length)) return;
    const grown = Buffer.allocUnsafe(Math.max(at - start + bytes, out === shared ? slotBytes * 2 : out.length * 2));
    out.copy(grown, 0, start, at);
    at -= start;
    start = 0;
    out = grown;
  };
  // A column's value: a tag byte, then the value (see unpack).
  const write = (value: unknown): void => {
    if (value === null || value === undefined) {
      reserve(1);
      out[at++] = 0;
    } else if (typeof value === 'number') {
      reserve(9);
      out[at++] = 1;
      at = out.writeDoubleLE(value, at);
    } else if (typeof value === 'string') {
      reserve(5 + value.length * 3);
      out[at] = 2;
      const length = out.write(value, at + 5, 'utf8');
      out.writeUInt32LE(length, at + 1);
      at += 5 + length;
    } else {
      const bytes = value as Buffer;
      reserve(5 + bytes.length);
      out[at] = 3;
      out.writeUInt32LE(bytes.length, at + 1);
      at += 5 + bytes.copy(out, at + 5);
    }
  };
  parentPort.on('message', ({ id, sql, params }: { id: number; sql: string; params: unknown[] }) => {
    try {
      const statement = statements.get(sql) ?? db.prepare(sql).raw(true);
      statements.set(sql, statement);
      const columns = statement.columns().map((column) => column.name);
      slot = (slot + 1) % full.length;
      // The event loop gives a slot back within the handler of the message that filled it.
      Atomics.wait(full, slot, 1);
      out = shared;
      start = at = slot * slotBytes;
      let rows = 0;
      for (const row of statement.iterate(...params) as Iterable<unknown[]>) {
        for (const value of row) write(value);
        rows++;
      }
      if (out === shared) {
        Atomics.store(full, slot, 1);
        parentPort.postMessage({ id, columns, rows, slot, length: at - start });
      } else {
        const data = new ArrayBuffer(at);
        new Uint8Array(data).set(out.subarray(0, at));
        parentPort.postMessage({ id, columns, rows, data }, [data]);
      }
    } catch (error) {
      const { message, code } = error as { message: string; code?: unknown };
      parentPort.postMessage({ id, error: { message: String(message), code: typeof code === 'string' ? code : undefined } });
    } finally {
      out = shared;
    }
  });
}
