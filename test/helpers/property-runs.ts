/**
 * The parameters of a property test's runs. The seed is fixed, so every run of the suite tries
 * the same cases and a failure comes back on the next run; PROPERTY_SEED=<number> tries another
 * set, PROPERTY_SEED=random a new one each time (fast-check prints the seed of a failure, to be
 * given back as PROPERTY_SEED).
 */
export function propertyRuns(numRuns: number): { numRuns: number; seed?: number } {
  const given = process.env.PROPERTY_SEED?.trim();
  if (given === 'random') return { numRuns };
  if (given === undefined || given === '') return { numRuns, seed: DEFAULT_SEED };
  const seed = Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error(`PROPERTY_SEED must be an integer or 'random', not '${given}'.`);
  return { numRuns, seed };
}

const DEFAULT_SEED = 20261125;
