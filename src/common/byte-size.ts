const UNITS: [string, number][] = [
  ['MiB', 1024 * 1024],
  ['KiB', 1024],
];

/** A byte count as people read it: `5 MiB`, `200 KiB`, `4.8 MiB`, `900 bytes`. */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of UNITS) {
    if (bytes >= size) {
      const value = bytes / size;
      return `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit}`;
    }
  }
  return `${bytes} bytes`;
}
