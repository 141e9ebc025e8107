/** A mistake in an operator's command (CLI): shown as is, exit code 1. */
export class OperatorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OperatorError';
  }
}
