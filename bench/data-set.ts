// The generated data set: one client with BRANCH_COUNT branches and `count` visits spread
// evenly over DATA_DAYS days ending yesterday, written over FEED_DAYS days (the change feed).

import { createRandom, demoVisits } from '../src/demo/demo-data.js';
import { renderStoredVisit } from '../src/visits/visit-json.js';
import { BRAND, CLIENT, DATA_DAYS, DAY, MINUTE, round, WINDOW_DAYS, type BenchDates } from './settings.js';

export const BRANCH_COUNT = 50;
const TOWNS = ['Leeds', 'Manchester', 'York', 'Sheffield', 'Nottingham', 'Birmingham', 'Liverpool', 'Bristol', 'Newcastle', 'Hull'];
const FIRST_VISIT_ID = 900_000_001;
/** The loaded visits were written over this many days before the bench started (within the feed's 90). */
const FEED_DAYS = 60;
const BENCH_STARTED_MS = Date.now();

export interface Branch {
  id: string;
  name: string;
  branchCode: string;
}

/** A visits table row, column name to value; the instants are UTC milliseconds, each loader writes them its own way. */
export interface VisitRow {
  id: number;
  client_id: number;
  brand_id: number;
  branch_id: string;
  visit_type: string;
  questionnaire_type: string;
  visit_score: number;
  recommend_score: number | null;
  recommend_comment: string | null;
  visit_date: string;
  visit_date_time: string;
  modification_date: string;
  visit_source: string | null;
  sections: string;
  guest_id: string | null;
  opt_in_contact_by_email: boolean | null;
  opt_in_join_marketing: boolean | null;
  completed_at: number;
  change_seq: number;
  changed_at: number;
}

export const VISIT_COLUMNS: (keyof VisitRow)[] = [
  'id',
  'client_id',
  'brand_id',
  'branch_id',
  'visit_type',
  'questionnaire_type',
  'visit_score',
  'recommend_score',
  'recommend_comment',
  'visit_date',
  'visit_date_time',
  'modification_date',
  'visit_source',
  'sections',
  'guest_id',
  'opt_in_contact_by_email',
  'opt_in_join_marketing',
  'completed_at',
  'change_seq',
  'changed_at',
];

/** The fields of a demo visit import record the generator borrows. */
interface DemoVisit {
  visitType: string;
  questionnaireType: string;
  recommendScore: number | null;
  recommendComment: string | null;
  visitSource: string | null;
  guestId: string | null;
  optIns?: { contactByEmail?: boolean; joinMarketing?: boolean } | null;
  sections: DemoSection[];
}

interface DemoSection {
  name: string;
  score: number;
  questions: unknown[];
}

interface Pool {
  visits: DemoVisit[];
  sections: Map<string, DemoSection[]>;
  names: string[];
}

export function benchBranches(): Branch[] {
  return Array.from({ length: BRANCH_COUNT }, (_, i) => {
    const n = String(i + 1).padStart(2, '0');
    const town = TOWNS[i % TOWNS.length];
    return {
      id: `BR-${CLIENT.id}-${String(i + 1).padStart(4, '0')}`,
      name: `${BRAND.name} ${town} ${n}`,
      branchCode: `AG-${town.slice(0, 3).toUpperCase()}-${n}`,
    };
  });
}

/**
 * Returns `visit(i)`: the row of visit i of `count`, spread evenly over DATA_DAYS days ending
 * yesterday, ids rising with time. Section contents are borrowed from the service's own demo
 * generator so that subjects, tags, answers and scores look real; they are only regrouped to
 * 5-7 sections of 3-5 questions, the size of a production visit.
 */
export function visitGenerator(count: number, dates: BenchDates, branches: Branch[]): (i: number) => VisitRow {
  const random = createRandom(20_240_601);
  const pools = demoPools(demoVisits({ today: '2024-06-01', days: 28 }) as unknown as DemoVisit[]);
  const firstDayMs = Date.parse(`${dates.firstDataDay}T00:00:00Z`);
  const todayMs = Date.parse(`${dates.today}T00:00:00Z`);

  return (i) => {
    // Day d holds visits ceil(d*count/DAYS) .. ceil((d+1)*count/DAYS)-1: even to within one.
    const day = Math.floor((i * DATA_DAYS) / count);
    const dayFirst = Math.ceil((day * count) / DATA_DAYS);
    const dayCount = Math.ceil(((day + 1) * count) / DATA_DAYS) - dayFirst;
    // Spread over opening hours, 11:00 to 22:59.
    const minute = 11 * 60 + Math.floor(((i - dayFirst) * 12 * 60) / dayCount);
    const startMs = firstDayMs + day * DAY + minute * MINUTE + random.int(0, 59) * 1000;
    const modifiedMs = Math.min(startMs + random.int(120, 1440) * MINUTE, todayMs - random.int(1, 45) * MINUTE);
    const completedMs = Math.min(startMs + random.int(15, 90) * MINUTE, modifiedMs);

    const roll = random.next();
    const type = roll < 0.2 ? 'MV' : roll < 0.8 ? 'OF' : 'TA';
    const pool = pools.get(type)!;
    const header = random.pick(pool.visits);
    const names = random.sample(pool.names, random.int(5, 7));
    const sections = names.map((name) => random.pick(pool.sections.get(name)!));
    const visitScore = round(sections.reduce((sum, s) => sum + s.score, 0) / sections.length, 1);
    const hour = new Date(startMs).getUTCHours();

    return {
      id: FIRST_VISIT_ID + i,
      client_id: CLIENT.id,
      brand_id: BRAND.id,
      branch_id: random.pick(branches).id,
      visit_type: type,
      questionnaire_type: type === 'MV' ? `Mystery Visit - ${hour < 16 ? 'Lunch' : 'Dinner'}` : header.questionnaireType,
      visit_score: visitScore,
      recommend_score: header.recommendScore,
      recommend_comment: header.recommendComment,
      visit_date: wallClock(startMs).slice(0, 10),
      visit_date_time: wallClock(startMs),
      modification_date: wallClock(modifiedMs),
      visit_source: header.visitSource,
      sections: JSON.stringify(sections),
      guest_id: header.guestId,
      opt_in_contact_by_email: header.optIns?.contactByEmail ?? null,
      opt_in_join_marketing: header.optIns?.joinMarketing ?? null,
      completed_at: completedMs,
      // A history of `count` writes in generation order over the last FEED_DAYS days: the change feed's order.
      change_seq: i + 1,
      changed_at: changedAt(i, count),
    };
  };
}

/**
 * Per visit type: the demo visits (for their headers: comments, sources, guests), and for each
 * section name the demo sections with 3-5 questions. Names are in questionnaire order (their
 * average relative position in the demo visits), so a sample keeps sections in a natural order.
 */
function demoPools(demo: DemoVisit[]): Map<string, Pool> {
  const position = new Map<string, [number, number]>();
  const pools = new Map<string, Pool>();
  for (const visit of demo) {
    const pool = pools.get(visit.visitType) ?? { visits: [], sections: new Map<string, DemoSection[]>(), names: [] };
    pools.set(visit.visitType, pool);
    pool.visits.push(visit);
    visit.sections.forEach((section, index) => {
      const [sum, n] = position.get(section.name) ?? [0, 0];
      position.set(section.name, [sum + index / visit.sections.length, n + 1]);
      if (section.questions.length < 3 || section.questions.length > 5) return;
      const list = pool.sections.get(section.name) ?? [];
      pool.sections.set(section.name, list);
      list.push(section);
    });
  }
  const rank = (name: string): number => position.get(name)![0] / position.get(name)![1];
  for (const [type, pool] of pools) {
    pool.names = [...pool.sections.keys()].sort((a, b) => rank(a) - rank(b));
    if (pool.names.length < 7) throw new Error(`demo data has too few section kinds for ${type} visits`);
  }
  for (const type of ['MV', 'OF', 'TA']) if (!pools.has(type)) throw new Error(`demo data has no ${type} visits`);
  return pools;
}

/** A visit_documents row: the visit's JSON as the service renders it when a visit is written. */
export interface DocumentRow {
  visit_id: number;
  branch_id: string;
  standard: Buffer;
  plus: Buffer;
}

export const DOCUMENT_COLUMNS: (keyof DocumentRow)[] = ['visit_id', 'branch_id', 'standard', 'plus'];

/**
 * The stored document of a generated visit, rendered by the service's own function: the
 * loaders write visits straight into the tables, so they write these beside them, as an
 * import would.
 */
export function visitDocument(row: VisitRow): DocumentRow {
  const { standard, plus } = renderStoredVisit(row);
  return { visit_id: row.id, branch_id: row.branch_id, standard, plus };
}

/** When write `i` of `count` happened: evenly over the FEED_DAYS days before the bench started. */
export function changedAt(i: number, count: number): number {
  return BENCH_STARTED_MS - FEED_DAYS * DAY + Math.floor((i * FEED_DAYS * DAY) / count);
}

/**
 * Visits in the request window: day d of the data holds visits ceil(d*count/DAYS) up to
 * ceil((d+1)*count/DAYS)-1 (see visitGenerator), and the window is the last WINDOW_DAYS days.
 */
export function windowVisits(count: number): number {
  return count - Math.ceil(((DATA_DAYS - WINDOW_DAYS) * count) / DATA_DAYS);
}

/** Wall-clock date-times are handled as UTC milliseconds, so no local zone leaks in. */
function wallClock(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}
