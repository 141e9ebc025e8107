import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';

/** What a worker is asked: the first `length` bytes of its shared buffer, in br at `quality` (`shared` when it is a new one). */
interface Job {
  id: number;
  length: number;
  quality: number;
  shared?: SharedArrayBuffer;
}

/** What a worker is told when the process has gone quiet: let go of its shared buffer and collect its heap. */
interface Release {
  release: true;
}

/** What a worker answers: the compressed bytes (moved, not copied), or why it could not. */
type Answer = { id: number; out: Uint8Array } | { id: number; error: string };

/** The buffers a worker's jobs leave before it collects them (see WORKER_CODE). */
const GARBAGE_BYTES = 4 * 1024 * 1024;

/**
 * A worker's code, run from this text (`eval`): the service runs from dist/ and its tests from
 * the TypeScript sources, and a worker needs a file of JavaScript. It compresses the body in the
 * buffer it shares with the service's thread with the synchronous call (it has nothing else to
 * do) and moves the result back. zlib's memory, which Node reports to the heap of the thread
 * that made the compressor, counts in this heap, not the service's (see CompressionWorkers), and
 * the body is never copied into it. It collects its heap (`gc`, exposed to it as it starts: see
 * startWorker) once its jobs' buffers pass GARBAGE_BYTES, and when told to let go of its buffer.
 */
const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const zlib = require('node:zlib');
const collect = typeof globalThis.gc === 'function' ? globalThis.gc : null;
let shared = null;
parentPort.on('message', (job) => {
  if (job.release) {
    shared = null;
    if (collect) collect();
    return;
  }
  if (job.shared) shared = job.shared;
  try {
    const body = Buffer.from(shared, 0, job.length);
    const out = zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: job.quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
    const whole = out.byteOffset === 0 && out.byteLength === out.buffer.byteLength;
    parentPort.postMessage({ id: job.id, out: new Uint8Array(out.buffer, out.byteOffset, out.byteLength) }, whole ? [out.buffer] : []);
  } catch (error) {
    parentPort.postMessage({ id: job.id, error: String((error && error.message) || error) });
  }
  // The jobs' buffers (zlib's output chunks) once they are a few megabytes: V8 would wait for
  // 64 MB of them, kept by this thread's malloc arena.
  // The figures come from /proc, which cannot be opened while every descriptor is taken (EMFILE): then no collection this time.
  let buffers = 0;
  try {
    buffers = process.memoryUsage().arrayBuffers;
  } catch {}
  if (collect && buffers > shared.byteLength + ${GARBAGE_BYTES}) collect();
});
`;

/** A worker, the buffer it shares with this thread (the body of its job is copied into it), and the job it runs, if any. */
interface Slot {
  worker: Worker;
  shared: SharedArrayBuffer | null;
  job: { id: number; resolve: (out: Buffer) => void; reject: (error: Error) => void } | null;
}

/** The least shared buffer a worker is given: grown to the next power of two that holds a body. */
const SHARED_MIN_BYTES = 1024 * 1024;

/**
 * Brotli compressions in worker threads, one job at a time each. In the libuv threadpool (zlib's
 * asynchronous calls), each brotli compression of a large page made a 4 MB window and a 16 MB
 * hash table that Node reports to V8 as the service's external memory, and V8 ran a full
 * collection of the service's heap for every other such page: 64 for 119 pages of 1,000 visits
 * asked for in br (README "Performance"). A worker's reports go to its own heap. The body goes
 * to the worker through a buffer the two threads share, kept for its next job (grown when a body
 * does not fit, let go when the process goes quiet): neither a copy of it in the worker's heap
 * nor a new buffer in the service's.
 *
 * The caller limits how many run at once (no more than there are workers). A worker that
 * fails (its thread ends) fails its job and is replaced; the workers never keep the process
 * alive.
 */
export class CompressionWorkers {
  private readonly slots: Slot[] = [];
  private nextId = 0;

  constructor(private readonly size: number) {}

  /** `body` compressed in br at `quality` by a free worker. */
  brotli(body: Buffer, quality: number): Promise<Buffer> {
    const slot = this.freeSlot();
    const id = this.nextId++;
    const job: Job = { id, length: body.length, quality };
    if (slot.shared === null || slot.shared.byteLength < body.length) {
      slot.shared = new SharedArrayBuffer(Math.max(SHARED_MIN_BYTES, 2 ** Math.ceil(Math.log2(body.length))));
      job.shared = slot.shared;
    }
    body.copy(new Uint8Array(slot.shared), 0, 0, body.length);
    return new Promise<Buffer>((resolve, reject) => {
      slot.job = { id, resolve, reject };
      slot.worker.postMessage(job);
    });
  }

  /**
   * Lets go of the shared buffer of every worker without a job (its next job is given a new
   * one) and has each collect its heap: called when the process has gone quiet, so that a run of
   * large pages does not leave a buffer the size of the largest, a few megabytes each, behind.
   * Gives the bytes let go.
   */
  letGo(): number {
    let bytes = 0;
    for (const slot of this.slots) {
      if (slot.job !== null || slot.shared === null) continue;
      bytes += slot.shared.byteLength;
      slot.shared = null;
      const release: Release = { release: true };
      slot.worker.postMessage(release);
    }
    return bytes;
  }

  /** Ends every worker (for tests; the service's workers end with the process). */
  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private freeSlot(): Slot {
    const free = this.slots.find((slot) => slot.job === null);
    if (free) return free;
    if (this.slots.length >= this.size) throw new Error(`more than ${this.size} compressions at once`);
    const slot = this.start();
    this.slots.push(slot);
    return slot;
  }

  private start(): Slot {
    const worker = startWorker();
    worker.unref();
    const slot: Slot = { worker, shared: null, job: null };
    worker.on('message', (answer: Answer) => {
      const job = slot.job;
      if (!job || job.id !== answer.id) return;
      slot.job = null;
      if ('error' in answer) job.reject(new Error(`compression failed: ${answer.error}`));
      else job.resolve(Buffer.from(answer.out.buffer, answer.out.byteOffset, answer.out.byteLength));
    });
    const gone = (error: Error): void => {
      const index = this.slots.indexOf(slot);
      if (index >= 0) this.slots.splice(index, 1);
      const job = slot.job;
      slot.job = null;
      job?.reject(error);
    };
    worker.on('error', gone);
    worker.on('exit', (code) => gone(new Error(`the compression worker ended (exit code ${code})`)));
    return slot;
  }
}

/** Workers starting now, whose context is made with `gc` (see startWorker). */
let starting = 0;

/**
 * A worker of WORKER_CODE, started with V8's `--expose-gc` on (a flag of the whole process, which
 * a worker's `execArgv` may not name) until it is running: its context then has `gc`. The flag is
 * turned off again once no worker is starting, as fullCollection does for the service's thread.
 */
function startWorker(): Worker {
  if (starting++ === 0) setFlagsFromString('--expose-gc');
  let started = false;
  const running = (): void => {
    if (started) return;
    started = true;
    if (--starting === 0) setFlagsFromString('--no-expose-gc');
  };
  const worker = new Worker(WORKER_CODE, { eval: true });
  worker.once('online', running);
  worker.once('exit', running);
  return worker;
}
