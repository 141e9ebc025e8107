const UNITS: [string, number][] = [
  ['MiB', 1024 * 1024],
  ['KiB', 1024],
];

/** A byte count as people read it: `5 MiB`, `200 KiB`, `4.8 MiB`, `900 bytes`. */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of UNITS) {
    if (bytes >= size) {
      const value = bytes / size;
      if (Number.isInteger(value)) return `${value} ${unit}`;
      // A figure that rounds to a whole one is no whole one: 2,048,000 bytes is 1.95 MiB, not 2.0.
      const shown = value.toFixed(1);
      return `${Number(shown) === Math.round(value) ? value.toFixed(2) : shown} ${unit}`;
    }
  }
  return `${bytes} bytes`;
}
