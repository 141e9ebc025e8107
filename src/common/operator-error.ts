/** A mistake in an operator's command (CLI), or what it found failed: shown as is, exit code 1; `details` go into its --json output beside `error`. */
export class OperatorError extends Error {
  constructor(
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'OperatorError';
  }
}
