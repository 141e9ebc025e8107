import { Worker } from 'node:worker_threads';

/** The content codings the workers compress with (the service sends them br only: see compress). */
export type WorkerCoding = 'br' | 'gzip';

/** What a worker is asked: a body to compress, with the coding's settings. */
interface Job {
  id: number;
  body: Uint8Array;
  coding: WorkerCoding;
  level: number;
}

/** What a worker answers: the compressed bytes (moved, not copied), or why it could not. */
type Answer = { id: number; out: Uint8Array } | { id: number; error: string };

/**
 * A worker's code, run from this text (`eval`): the service runs from dist/ and its tests from
 * the TypeScript sources, and a worker needs a file of JavaScript. It compresses each body it is
 * sent with the synchronous call (it has nothing else to do), moves the result back, and runs a
 * full collection of its own small heap: the copy of the body it was sent is freed at once, and
 * zlib's memory, which Node reports to the heap of the thread that made the compressor, counts
 * in this heap, not the service's (see CompressionWorkers).
 */
const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const { setFlagsFromString } = require('node:v8');
const { runInNewContext } = require('node:vm');
const zlib = require('node:zlib');
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
setFlagsFromString('--no-expose-gc');
parentPort.on('message', (job) => {
  try {
    const body = Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength);
    const out = job.coding === 'gzip'
      ? zlib.gzipSync(body, { level: job.level })
      : zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: job.level, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
    const bytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
    parentPort.postMessage({ id: job.id, out: bytes }, out.byteOffset === 0 && out.byteLength === out.buffer.byteLength ? [out.buffer] : []);
  } catch (error) {
    parentPort.postMessage({ id: job.id, error: String(error && error.message || error) });
  }
  job = null;
  collect();
});
`;

/** A worker and the job it runs, if any. */
interface Slot {
  worker: Worker;
  job: { id: number; resolve: (out: Buffer) => void; reject: (error: Error) => void } | null;
}

/**
 * Compressions in worker threads, one job at a time each. In the libuv threadpool (zlib's
 * asynchronous calls), each brotli compression of a large page made a 4 MB window and a 16 MB
 * hash table that Node reports to V8 as the service's external memory, and V8 ran a full
 * collection of the service's heap for every other such page: 64 for 119 pages of 1,000 visits
 * asked for in br (README "Performance"). A worker's reports go to its own heap, of a few
 * megabytes, which it collects after each job.
 *
 * The caller limits how many run at once (no more than there are workers). A worker that
 * fails (its thread ends) fails its job and is replaced; the workers never keep the process
 * alive.
 */
export class CompressionWorkers {
  private readonly slots: Slot[] = [];
  private nextId = 0;

  constructor(private readonly size: number) {}

  /** `body` compressed in `coding` at `level` (brotli's quality, gzip's level) by a free worker. */
  run(body: Buffer, coding: WorkerCoding, level: number): Promise<Buffer> {
    const slot = this.freeSlot();
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      slot.job = { id, resolve, reject };
      const job: Job = { id, body, coding, level };
      slot.worker.postMessage(job);
    });
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
    const worker = new Worker(WORKER_CODE, { eval: true });
    worker.unref();
    const slot: Slot = { worker, job: null };
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
