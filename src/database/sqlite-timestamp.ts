/** How the SQLite driver stores a Date (UTC, milliseconds), so that stored and given times compare as text. */
export function sqliteTimestamp(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}
