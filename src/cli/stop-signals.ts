import { constants } from 'node:os';

/**
 * SIGTERM and SIGINT during a long command (an import): the first asks it to stop at its next
 * step, where what it wrote is whole (an import after the batch being written, which commits in
 * one transaction), and to say so; a second ends the process at once, and what was being
 * written rolls back. A Job's pod being stopped, or Ctrl-C, then leaves a report of what was
 * written instead of nothing. `requested` gives why it was asked to stop, or null; `dispose`
 * gives the signals back to Node's default.
 */
export function stopOnSignals(stderr: { write(text: string): unknown }): { requested: () => string | null; dispose: () => void } {
  let reason: string | null = null;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (reason !== null) process.exit(128 + constants.signals[signal]);
    reason = `the process received ${signal}`;
    stderr.write(`${signal}: stopping once the batch being written is committed; a second signal stops at once, rolling it back.\n`);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    requested: () => reason,
    dispose: () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    },
  };
}
