/** What an import did: how many records it wrote, and each record it refused with why. */
export interface ImportReport {
  file: string;
  imported: number;
  rejected: RejectedRecord[];
}

export interface RejectedRecord {
  line: number;
  errors: string[];
}

/**
 * An import that stopped part-way on an error of the database or the process, after some of its
 * batches were written: says where it stopped and what was written, since an import is
 * idempotent (records already written are unchanged when the file is imported again).
 */
export class ImportInterrupted extends Error {
  constructor(
    readonly report: ImportReport,
    readonly line: number,
    override readonly cause: unknown,
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `the import stopped at line ${line} (${reason}); the ${report.imported} records before it were written and stay written. ` +
        'Importing the file again is safe: records already written are unchanged.',
    );
    this.name = 'ImportInterrupted';
  }
}
