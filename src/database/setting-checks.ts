import { createHmac, timingSafeEqual } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { QueryFailedError, type DataSource } from 'typeorm';
import { SettingCheck } from './setting-check.entity.js';
import { ConfigError, type AppConfig } from '../config/app-config.js';
import { OperatorError } from '../common/operator-error.js';

/**
 * API keys and client secrets are stored as HMACs under API_KEY_HASH_KEY, and webhook secrets
 * and signing keys sealed under keys derived from it: a command run with another value than
 * the service's wrote a credential, an API key, a rotated secret or a webhook secret that no
 * replica could ever use, said nothing and exited 0 (a rotated client secret locked the partner
 * out, its old secret ended and its new one refused). Nothing stored tells the value apart from
 * another but what it hashed, so a check value of it is kept once, in the database the rows
 * are written to: the service's start stores it when there is none, and every writer of such
 * rows compares its own before it writes.
 */
const SETTING = 'API_KEY_HASH_KEY';
/**
 * RESULTS_TIMEZONE is checked alike: an import, a rename or a branch's move of brand dates the
 * visits it changes (modificationDate, a local time) by now in the zone it runs with, so one run
 * with another zone than the service's served visits changed hours in the future (or the past),
 * and held every later change of them at a second past that. Its value is no secret: stored as it is.
 */
const ZONE = 'RESULTS_TIMEZONE';
const PREFIX = 'hmac-sha256$';

/**
 * A zone's UTC offsets at instants around now (a year back and forward, a quarter apart), or
 * null for a name the time zone database does not know.
 */
function offsetsAround(zone: string, now: number): string[] | null {
  try {
    const format = new Intl.DateTimeFormat('en-GB', { timeZone: zone, timeZoneName: 'longOffset' });
    return [-365, -273, -182, -91, 0, 91, 182, 273, 365].map((days) => format.format(now + days * 86_400_000));
  } catch {
    return null;
  }
}

/**
 * Whether two zone names date this service's writes alike: the same name, or zones whose
 * offsets agree around now (`US/Eastern` and `America/New_York`, `Etc/UTC` and `UTC`, which
 * are one zone under two names). Judged by what the zones do rather than by a canonical name,
 * which engines are to stop giving (Intl's resolvedOptions().timeZone keeps the name asked for).
 */
function sameZone(a: string, b: string): boolean {
  if (a === b) return true;
  const now = Date.now();
  const [x, y] = [offsetsAround(a, now), offsetsAround(b, now)];
  return x !== null && y !== null && x.every((offset, i) => offset === y[i]);
}

/** The check value of an API_KEY_HASH_KEY: an HMAC of a label of its own, which no stored hash or sealing key is. */
function keyCheckValue(apiKeyHashKey: string): string {
  return PREFIX + createHmac('sha256', apiKeyHashKey).update('results-service key check').digest('hex');
}

/** Whether `stored` is the check value of `apiKeyHashKey` (compared in constant time). */
function matches(stored: string, apiKeyHashKey: string): boolean {
  const mine = Buffer.from(keyCheckValue(apiKeyHashKey));
  const theirs = Buffer.from(stored);
  return mine.length === theirs.length && timingSafeEqual(mine, theirs);
}

/**
 * The stored check of a setting; null when there is none, or no table for it yet (a database the
 * migrations of this release have not reached: the start that applies them stores it).
 */
async function storedCheck(db: DataSource, name: string): Promise<string | null> {
  try {
    return (await db.getRepository(SettingCheck).findOneBy({ name }))?.value ?? null;
  } catch (error) {
    if (missingTable(error)) return null;
    throw error;
  }
}

/**
 * The table not made yet: PostgreSQL's undefined_table by its code (its message is in the
 * server's lc_messages language), SQLite's by its message (always English).
 */
const missingTable = (error: unknown): boolean =>
  error instanceof QueryFailedError && ((error.driverError as { code?: unknown } | undefined)?.code === '42P01' || /no such table/.test(error.message));

const DIFFERS = `${SETTING} is not the value the database's API keys, client secrets and webhook secrets were stored under (its check value differs)`;

/**
 * What establishSettingChecks found: the check stored (this process's, or the same value
 * another stored), no table for it yet (a database the migrations have not reached), or a
 * check that could not be stored for another reason (said in a warning).
 */
export type SettingChecksOutcome = 'stored' | 'no-table' | 'not-stored';

/**
 * At the service's start: stores this process's check value when the database has none (the
 * first start of a release that keeps one, or of a new database), and stops (exit 78, as a
 * wrong setting) when the one stored is another's: every API key and client secret would be
 * refused, and what the process issued or sealed would work on no other replica.
 */
export async function establishSettingChecks(db: DataSource, config: AppConfig): Promise<SettingChecksOutcome> {
  const stored = await checkAtStart(db, SETTING);
  // Why none is kept, when none is: the insert's failure.
  let unkept: Exclude<SettingChecksOutcome, 'stored'> = 'not-stored';
  try {
    if (stored === null) {
      // Replicas starting together store one value: the first insert wins, the others read it.
      await db.createQueryBuilder().insert().into(SettingCheck).values({ name: SETTING, value: keyCheckValue(config.API_KEY_HASH_KEY) }).orIgnore().execute();
    }
  } catch (error) {
    unkept = notStored(error);
  }
  const kept = stored ?? (await checkAtStart(db, SETTING));
  if (kept !== null && !matches(kept, config.API_KEY_HASH_KEY)) {
    throw new ConfigError([`${DIFFERS}: set the value they were stored under`]);
  }
  // The service's zone is the one its answers judge dates in: the start's value is stored, a
  // change of it included (nothing stored depends on it being kept).
  try {
    if ((await storedCheck(db, ZONE)) !== config.RESULTS_TIMEZONE) {
      await db.getRepository(SettingCheck).upsert({ name: ZONE, value: config.RESULTS_TIMEZONE }, ['name']);
    }
  } catch (error) {
    notStored(error);
  }
  return kept === null ? unkept : 'stored';
}

/**
 * A start that found no table for the checks (a replica started with MIGRATIONS_RUN=false
 * before the migrations Job made it) stores them once the table is there, trying every `everyMs`:
 * until a start of a later process did, no check was kept, and a command run with another
 * API_KEY_HASH_KEY issued credentials no replica took. A check another process stored meanwhile
 * with another value is `differs`'s (the start's exit 78, for a process already serving); a
 * database out of reach is tried again. Returns what stops the tries.
 */
export function storeSettingChecksLater(db: DataSource, config: AppConfig, differs: (error: ConfigError) => void, everyMs = 5000): () => void {
  let trying = false;
  const timer = setInterval(() => {
    if (trying) return;
    trying = true;
    establishSettingChecks(db, config)
      .then((outcome) => {
        if (outcome !== 'no-table') clearInterval(timer);
        if (outcome === 'stored') new Logger('SettingChecks').log("the settings' checks are stored, now that the migrations have made their table");
      })
      .catch((error: unknown) => {
        if (error instanceof ConfigError) {
          clearInterval(timer);
          differs(error);
        }
      })
      .finally(() => (trying = false));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The stored check of `name` at the start. One that cannot be read (a statement the database
 * refuses, a role without the grant to read it) stops the start as a database that cannot be
 * used (exit 69, tried again): served without it, a start with another API_KEY_HASH_KEY than
 * the database's refused every API key and client secret, and sealed what no other replica opens.
 */
async function checkAtStart(db: DataSource, name: string): Promise<string | null> {
  try {
    return await storedCheck(db, name);
  } catch (error) {
    if (error instanceof QueryFailedError) throw new SettingChecksUnreadableError(name, error.message);
    throw error;
  }
}

/**
 * A check the start cannot write: it goes on without it, as it serves with what it cannot write
 * (a table the migrations have not made yet with MIGRATIONS_RUN=false, a role without the grant,
 * a database read-only for maintenance); the next start stores it, and commands meanwhile have
 * nothing to compare.
 */
function notStored(error: unknown): 'no-table' | 'not-stored' {
  if (!(error instanceof QueryFailedError)) throw error;
  if (missingTable(error)) return 'no-table';
  new Logger('SettingChecks').warn(`the settings' checks cannot be stored (${error.message}): commands run with other settings than this process's are not refused`);
  return 'not-stored';
}

/** The start could not read a setting's stored check: it does not serve without knowing it (see checkAtStart). */
export class SettingChecksUnreadableError extends Error {
  constructor(name: string, cause: string) {
    super(
      `the database cannot be used: the stored check of ${name} cannot be read (${cause}); ` +
        `without it a start with another value than the one the database's keys were stored under would serve, refusing every API key`,
    );
    this.name = 'SettingChecksUnreadableError';
  }
}

/**
 * Before a command writes an API key, a client secret, a webhook secret or a signing key, or
 * retires a signing key (judged by whether this process can open it):
 * refuses, writing nothing, when the database's check value is not this process's. A database
 * without one (no start of this release has run on it yet) cannot tell, and is written to.
 */
export async function assertKeyCheck(db: DataSource, config: AppConfig): Promise<void> {
  const stored = await storedCheck(db, SETTING);
  if (stored !== null && !matches(stored, config.API_KEY_HASH_KEY)) {
    throw new OperatorError(
      `${DIFFERS}: what this command would issue or seal would work on no replica of the service, and the stored keys it judges by it are the service's; ` +
        `run it with the API_KEY_HASH_KEY the service runs with. Nothing was written.`,
    );
  }
}

/**
 * Before a command writes local times the API serves (visits written or written again: imports,
 * renames, a branch's move of brand, the demo data set): refuses, writing nothing, when the
 * service's last start stored another RESULTS_TIMEZONE than this process's (another zone: two
 * names of one zone, such as `US/Eastern` and `America/New_York`, are the same; see sameZone). A database
 * without one cannot tell, and is written to.
 */
export async function assertZoneCheck(db: DataSource, config: AppConfig): Promise<void> {
  const stored = await storedCheck(db, ZONE);
  if (stored !== null && !sameZone(stored, config.RESULTS_TIMEZONE)) {
    throw new OperatorError(
      `RESULTS_TIMEZONE is ${config.RESULTS_TIMEZONE}, and the service runs with ${stored} (as its last start stored): ` +
        `the modification dates this command writes would be in another zone than those it serves; run it with RESULTS_TIMEZONE=${stored}. Nothing was written.`,
    );
  }
}
