/** Seeded randomness for the demo data set: the same seed always gives the same data. */

export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** A number in [min, max), rounded to `decimals` places when given. */
  float(min: number, max: number, decimals?: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** A normally distributed number (Box-Muller). */
  normal(mean: number, sd: number): number;
  /** `count` distinct items, in their original order. */
  sample<T>(items: readonly T[], count: number): T[];
}

export function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

export function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** A small seeded PRNG (mulberry32) with the helpers the generator needs. */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    float: (min, max, decimals) => {
      const value = min + next() * (max - min);
      return decimals === undefined ? value : round(value, decimals);
    },
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('cannot pick from an empty list');
      return items[int(0, items.length - 1)];
    },
    normal: (mean, sd) => {
      const u = 1 - next();
      const v = next();
      return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
    sample: <T>(items: readonly T[], count: number): T[] => {
      const indexes = items.map((_, i) => i);
      const n = Math.max(0, Math.min(count, items.length));
      for (let i = 0; i < n; i++) {
        const j = int(i, indexes.length - 1);
        [indexes[i], indexes[j]] = [indexes[j], indexes[i]];
      }
      return indexes
        .slice(0, n)
        .sort((a, b) => a - b)
        .map((i) => items[i]);
    },
  };
}
