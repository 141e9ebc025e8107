/** What an import did: how many records it wrote, and each record it refused with why. */
export interface ImportReport {
  file: string;
  imported: number;
  rejected: RejectedRecord[];
}

export interface RejectedRecord {
  line: number;
  /** The record's place in a JSON array file (from 1): records on one line are told apart by it. */
  element?: number;
  errors: string[];
}

/** Where a record of an import file is: its line, and its place in a JSON array file. */
export interface RecordPlace {
  line: number;
  element?: number;
}

/** A refused record at its place in the file. */
export function rejectedAt(place: RecordPlace, errors: string[]): RejectedRecord {
  return place.element === undefined ? { line: place.line, errors } : { line: place.line, element: place.element, errors };
}

/** File order: by line, then by place in the array. */
export function inFileOrder(a: RecordPlace, b: RecordPlace): number {
  return a.line - b.line || (a.element ?? 0) - (b.element ?? 0);
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
      report.imported === 0
        ? `the import stopped at line ${line} (${reason}); nothing of the file was written. Importing it again is safe.`
        : `the import stopped at line ${line} (${reason}); the ${report.imported} records before it were written and stay written. ` +
            'Importing the file again is safe: records already written are unchanged.',
    );
    this.name = 'ImportInterrupted';
  }
}
