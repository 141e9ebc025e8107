import { setFlagsFromString } from 'node:v8';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { runInNewContext } from 'node:vm';

/** What IdleCollector reads and does: the process's own in startIdleCollector, a test's own in its tests. */
export interface IdleCollectorProbe {
  /** Bytes of memory held by ArrayBuffers and Buffers, live or not yet collected. */
  bufferBytes(): number;
  /** The event loop's busy share since the last call, 0 to 1. */
  busyShare(): number;
  /** A full garbage collection. */
  collect(): void;
  /** Lets go of memory kept for re-use (see BodyPool), before a collection is weighed; the bytes let go. */
  letGo?(): number;
}

/** The event loop's busy share below which the process counts as quiet. */
const QUIET_SHARE = 0.05;

/** Buffer memory grown since the last collection that is worth one: a few dozen dead 100-visit pages, or four of 1,000. */
export const IDLE_COLLECT_BYTES = 16 * 1024 * 1024;

/** Quiet checks before the first collection run only to see whether memory held since the last one is still live. */
const FIRST_RECHECK = 2;
/** Quiet checks between such collections at most (a minute at the default IDLE_GC_SECONDS). */
const LAST_RECHECK = 12;

/**
 * Runs a full garbage collection when the process has gone quiet with more buffer memory than
 * after the last one. Page bodies (hundreds of KB to megabytes each) live outside V8's heap;
 * those that outlived a young-generation collection (a page being sent while the next ones
 * are read) are only freed by a full collection, and once the load stops V8 has no reason to
 * run one: after a run of 1000-visit pages the service idled with 44 MB of such dead buffers,
 * 169 MB of RSS where a full collection left 126 MB (README "Performance"). A collection
 * holds the event loop for up to about 100 ms (a heap of 64 MB of small objects took 100 to
 * 145 ms on a busy 2-core machine), so it only runs when the process is quiet.
 *
 * What a collection leaves may be live only for a while: uploads or pages in flight while it
 * ran (hundreds of MB) die once their requests end, and since the figure does not fall until
 * the next collection, growth over it would never show. So while memory after the last
 * collection stays a threshold above the least ever seen, the process collects again when
 * quiet, after 2 checks, then 4, 8, at most 12 while nothing is freed: a cache that stays
 * costs one collection a minute of quiet, dead buffers are returned within that.
 */
export class IdleCollector {
  /** Buffer memory after the last collection (or at start): what counts as held. */
  private baseline: number;
  /** The least buffer memory seen: what the process holds with nothing in flight, or less. */
  private floor: number;
  /** Quiet checks between collections run only because memory is held above the floor. */
  private recheckEvery = FIRST_RECHECK;
  /** Quiet checks left until the next of them. */
  private recheckIn = FIRST_RECHECK;

  constructor(
    private readonly probe: IdleCollectorProbe,
    /** Growth over the baseline, in bytes, worth a collection. */
    private readonly thresholdBytes: number,
  ) {
    this.baseline = probe.bufferBytes();
    this.floor = this.baseline;
  }

  /** Called at every interval: collects when the interval was quiet and buffers grew, or memory stays held; true when it did. */
  check(): boolean {
    if (this.probe.busyShare() >= QUIET_SHARE) return false;
    // Buffers let go are counted until they are collected, as held: they count as grown.
    const letGo = this.probe.letGo?.() ?? 0;
    const bytes = this.probe.bufferBytes();
    // Buffers freed meanwhile (by V8's own collections) lower what counts as held.
    if (bytes < this.baseline) this.baseline = bytes;
    if (bytes < this.floor) this.floor = bytes;
    const grown = bytes - this.baseline + letGo >= this.thresholdBytes;
    const held = this.baseline - this.floor >= this.thresholdBytes;
    if (!grown && !(held && --this.recheckIn <= 0)) return false;
    this.probe.collect();
    const after = this.probe.bufferBytes();
    // Memory held and nothing freed: it is likely to stay, so look again later each time.
    this.recheckEvery = !grown && bytes - after < this.thresholdBytes ? Math.min(LAST_RECHECK, this.recheckEvery * 2) : FIRST_RECHECK;
    this.recheckIn = this.recheckEvery;
    this.baseline = after;
    this.floor = Math.min(this.floor, after);
    return true;
  }
}

/**
 * V8's full collection, as `--expose-gc` gives it: that function when the process was started
 * with the flag, else the flag is turned on, the function taken from a new context and the
 * flag turned off again, the way jest's leak detector does.
 */
export function fullCollection(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return exposed;
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  // Only this function: contexts made later get no `gc` global.
  setFlagsFromString('--no-expose-gc');
  return collect;
}

/**
 * Checks every `seconds` on this process (see IdleCollector), letting go of what `letGo` keeps
 * for re-use and telling `collected` of every collection run; the timer does not keep the
 * process alive.
 */
export function startIdleCollector(
  seconds: number,
  { collected = () => undefined, letGo, thresholdBytes = IDLE_COLLECT_BYTES }: { collected?: () => void; letGo?: () => number; thresholdBytes?: number } = {},
): { stop(): void } {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const collect = fullCollection();
  const collector = new IdleCollector(
    {
      bufferBytes: () => {
        try {
          return process.memoryUsage().arrayBuffers;
        } catch {
          // The process's figures are read from /proc, which cannot be opened while every file
          // descriptor is taken (EMFILE, a flood of connections): thrown in this timer, that
          // stopped the process. No collection this time; the next check reads them again.
          return 0;
        }
      },
      busyShare: () => {
        const now = performance.eventLoopUtilization();
        const share = performance.eventLoopUtilization(now, last).utilization;
        last = now;
        return share;
      },
      collect: () => {
        collect();
        collected();
      },
      letGo,
    },
    thresholdBytes,
  );
  const timer = setInterval(() => collector.check(), seconds * 1000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
