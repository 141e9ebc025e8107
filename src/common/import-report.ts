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
