import { addDays, instantOfLocal } from '../common/clock.js';
import {
  CLIENTS,
  QUESTIONNAIRE,
  requireCalendarDate,
  type CatalogueBrand,
  type QuestionTemplate,
  type SectionTemplate,
} from './demo-catalogue.js';
import { clamp, createRandom, round, type Random } from './random.js';

/**
 * The demo visits: a few months of guest-experience visits to the catalogue's branches, made
 * up by a seeded generator, so the same arguments always give the same visits. Nothing here
 * reads the clock: `today` is a parameter.
 *
 * Visit times are wall-clock values of the venue, as the interface carries them: they are
 * worked out as milliseconds from midnight 1970-01-01 of that wall clock (no zone applies),
 * and only `completedAt`, an instant, is placed in the zone (RESULTS_TIMEZONE).
 */

type VisitType = 'MV' | 'OF' | 'TA';

const MINUTE = 60_000;
const DAY = 86_400_000;
const FIRST_VISIT_ID = 700_000_001;
/**
 * The day whose first branch's first visit is FIRST_VISIT_ID. A visit's id is its day's (counted
 * from this one), its branch's and its place among the branch's visits of the day: the same
 * visit has the same id whichever day the demo is made on, so a demo loaded again another day
 * writes each day's visits under the ids they had (and their branch's client), and adds the
 * new days; ids counted from the first visit made moved a day's visits to other ids, each
 * another client's visit then (refused, part of the demo written).
 */
const FIRST_VISIT_DAY = '2024-01-01';
/** Visits a branch has on a day, at most. */
const BRANCH_DAY_SLOTS = 3;
const DEFAULT_SEED = 20_241_001;
/** The zone of the default RESULTS_TIMEZONE. */
const DEFAULT_ZONE = 'Europe/London';
/** Expected visits per branch on an average day, before the weekday and branch factors. */
const DAILY_VISITS = 1.25;
/** Sunday first, as Date.getUTCDay counts. */
const WEEKDAY_FACTORS = [1.1, 0.75, 0.8, 0.9, 1.0, 1.25, 1.4] as const;
const FEEDBACK_SOURCES = ['Web', 'Email invitation', 'Email invitation', 'QR code', 'QR code'] as const;
const REVIEW_SOURCES = ['Google', 'Google', 'TripAdvisor'] as const;

interface BranchProfile {
  id: string;
  name: string;
  branchCode: string | null;
  clientId: number;
  clientName: string;
  brand: CatalogueBrand;
  town: string;
  /** How many visits it gets (about 1) and how well they go (0..1). */
  traffic: number;
  quality: number;
}

/** A wall-clock date-time `yyyy-mm-ddThh:mm:ss` from its milliseconds (see above). */
const wallClock = (ms: number): string => new Date(ms).toISOString().slice(0, 19);
const midnightOf = (date: string): number => Date.parse(`${date}T00:00:00Z`);

/** Every branch of the catalogue, with the traits drawn for it (a quality the catalogue gives is kept). */
function branchProfiles(random: Random): BranchProfile[] {
  return CLIENTS.flatMap((client) =>
    client.brands.flatMap((brand) =>
      brand.branches.map((branch) => {
        const quality = branch.quality ?? random.float(0.72, 0.88);
        const { id, name, branchCode, town } = branch;
        return { id, name, branchCode, town, clientId: client.id, clientName: client.name, brand, traffic: random.float(0.75, 1.25), quality };
      }),
    ),
  );
}

/** What the demo's visits are made for: the days before `today`, in `zone`, from a seed. */
export interface DemoVisitsOptions {
  today: string;
  days: number;
  seed?: number;
  zone?: string;
}

/**
 * Visit import records, one per visit, for each day from `today - days` to yesterday (today
 * itself is never included), with `completedAt` placed in `zone` (Europe/London by default).
 */
export function demoVisits(options: DemoVisitsOptions): Record<string, unknown>[] {
  return [...eachDemoVisit(options)];
}

/**
 * The visits of demoVisits one at a time, as they are made: a year of them is some 80 MB of
 * JSON and three times that as objects, more than the service's heap (the image gives it 256
 * MB), so the demo writes each to its file as it comes.
 */
export function* eachDemoVisit(options: DemoVisitsOptions): Generator<Record<string, unknown>> {
  const { today, days, zone = DEFAULT_ZONE } = options;
  requireCalendarDate(today);
  if (!Number.isSafeInteger(days) || days < 0) throw new Error(`days must be a non-negative integer: ${days}`);
  const seed = options.seed ?? DEFAULT_SEED;
  const random = createRandom(seed);
  const branches = branchProfiles(random);
  const context: VisitContext = { random, guests: new GuestBook(random), todayMs: midnightOf(today), zone };
  const stride = branches.length * BRANCH_DAY_SLOTS;

  for (let offset = days; offset >= 1; offset--) {
    const dayMs = midnightOf(addDays(today, -offset));
    const weekday = new Date(dayMs).getUTCDay();
    const day = Math.round((dayMs - midnightOf(FIRST_VISIT_DAY)) / DAY);
    const dayFirstId = FIRST_VISIT_ID + day * stride;
    for (const [index, branch] of branches.entries()) {
      // How many visits a branch has on a day, and when, from that day's and branch's own
      // draws: the same whichever day the demo is made on, so a demo loaded again writes each
      // of them again under its id, and none of an earlier load is left beside them.
      const slots = createRandom((seed ^ Math.imul(day + 1, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0);
      const expected = clamp(DAILY_VISITS * (WEEKDAY_FACTORS[weekday] ?? 1) * branch.traffic, 0, BRANCH_DAY_SLOTS);
      let count = 0;
      for (let slot = 0; slot < BRANCH_DAY_SLOTS; slot++) if (slots.chance(expected / BRANCH_DAY_SLOTS)) count++;
      const starts = Array.from({ length: count }, () => visitStart(slots)).sort((a, b) => a - b);
      for (const [slot, start] of starts.entries()) yield buildVisit(context, dayFirstId + index * BRANCH_DAY_SLOTS + slot, branch, dayMs + start * MINUTE);
    }
  }
}

/** Minutes after midnight: lunch (12:00-14:45) or dinner (17:30-21:45), in five-minute steps. */
function visitStart(random: Random): number {
  return random.chance(0.4) ? 12 * 60 + 5 * random.int(0, 33) : 17 * 60 + 30 + 5 * random.int(0, 51);
}

/** Online-feedback guests per client; about one in five feedback visits is a returning guest. */
class GuestBook {
  private readonly byClient = new Map<number, string[]>();
  private readonly issued = new Set<string>();

  constructor(private readonly random: Random) {}

  guestFor(clientId: number): string {
    const known = this.byClient.get(clientId) ?? [];
    this.byClient.set(clientId, known);
    if (known.length > 20 && this.random.chance(0.2)) return this.random.pick(known);
    let id: string;
    do {
      id = `G-${this.random.int(0, 0xffffffff).toString(16).padStart(8, '0').toUpperCase()}`;
    } while (this.issued.has(id));
    this.issued.add(id);
    known.push(id);
    return id;
  }
}

interface VisitContext {
  random: Random;
  guests: GuestBook;
  /** Midnight starting today, on the wall clock. */
  todayMs: number;
  zone: string;
}

const QUESTIONNAIRE_TYPES: Record<VisitType, (hour: number) => string> = {
  MV: (hour) => `Mystery Visit - ${hour < 16 ? 'Lunch' : 'Dinner'}`,
  OF: () => 'Online Feedback',
  TA: () => 'Third-party Review',
};

function buildVisit(context: VisitContext, visitId: number, branch: BranchProfile, startMs: number): Record<string, unknown> {
  const { random, guests } = context;
  const roll = random.next();
  const visitType: VisitType = roll < 0.2 ? 'MV' : roll < 0.8 ? 'OF' : 'TA';
  const brand = branch.brand;

  // How this visit went, 0..1: the branch's level, the day's luck and the channel's bias.
  let quality = random.normal(branch.quality, 0.08);
  if (visitType === 'OF') quality += 0.02;
  if (visitType === 'TA') quality = random.chance(0.15) ? random.float(0.2, 0.5) : quality - 0.02;
  quality = clamp(quality, 0.1, 0.99);

  const mainDish = random.pick(brand.dishes.Main);
  const sections = answeredSections(random, visitType, quality, brand, mainDish);
  const visitScore = round(sections.reduce((sum, s) => sum + s.score, 0) / sections.length, 1);
  const { recommendScore, recommendComment } = recommendation(random, quality, branch.town, mainDish);
  const { modifiedMs, completedMs } = visitTimes(random, startMs, context.todayMs);
  const visitSource = sourceOf(random, visitType);

  return {
    visitId,
    clientId: branch.clientId,
    clientName: branch.clientName,
    brandId: brand.id,
    brandName: brand.name,
    branchId: branch.id,
    branchCode: branch.branchCode,
    branchName: branch.name,
    visitType,
    questionnaireType: QUESTIONNAIRE_TYPES[visitType](new Date(startMs).getUTCHours()),
    visitScore,
    recommendScore,
    recommendComment,
    visitDateTime: wallClock(startMs),
    modificationDate: wallClock(modifiedMs),
    visitSource,
    sections,
    guestId: visitType === 'OF' ? guests.guestFor(branch.clientId) : null,
    optIns:
      visitType === 'OF'
        ? {
            contactByEmail: random.chance(0.08) ? null : random.chance(0.6),
            joinMarketing: random.chance(0.1) ? null : random.chance(0.35),
          }
        : null,
    completedAt: `${instantOfLocal(wallClock(completedMs), context.zone).toISOString().slice(0, 19)}Z`,
  };
}

/** The sections a visit answers: those always asked and some drawn, in the questionnaire's order. */
function answeredSections(random: Random, visitType: VisitType, quality: number, brand: CatalogueBrand, mainDish: string): DemoSection[] {
  const { sections, alwaysAsked } = QUESTIONNAIRE;
  const scale = visitType === 'MV' ? 100 : 10;
  const sectionCount = visitType === 'MV' ? random.int(6, 8) : visitType === 'OF' ? random.int(4, 7) : random.int(4, 5);
  const optional = sections.filter((s) => !alwaysAsked.includes(s.name));
  const extra = random.sample(optional, sectionCount - alwaysAsked.length).map((s) => s.name);
  const chosen = new Set([...alwaysAsked, ...extra]);
  return sections.filter((s) => chosen.has(s.name)).map((s) => buildSection(random, s, visitType, scale, quality, brand, mainDish));
}

/** Whether the guest would recommend the place (0-10), and why, in the words of a promoter, passive or detractor. */
function recommendation(
  random: Random,
  quality: number,
  town: string,
  mainDish: string,
): { recommendScore: number | null; recommendComment: string | null } {
  const recommendScore = random.chance(0.1) ? null : Math.round(clamp(random.normal(quality * 10 + 0.6, 1.2), 0, 10));
  const band = recommendScore ?? Math.round(quality * 10);
  const { promoter, passive, detractor } = QUESTIONNAIRE.recommendComments;
  const comments = band >= 9 ? promoter : band >= 7 ? passive : detractor;
  if (random.chance(0.15)) return { recommendScore, recommendComment: null };
  return { recommendScore, recommendComment: random.pick(comments).replace('{place}', town).replace('{dish}', mainDish.toLowerCase()) };
}

/** Modified a few hours to a day after the visit, and always before today began; completed in between. */
function visitTimes(random: Random, startMs: number, todayMs: number): { modifiedMs: number; completedMs: number } {
  const latest = todayMs - random.int(1, 45) * MINUTE;
  const modifiedMs = Math.max(
    startMs + 90 * MINUTE,
    Math.min(startMs + random.int(120, 1440) * MINUTE + random.int(0, 59) * 1000, latest),
  );
  const completedWithin = Math.min(180, Math.floor((modifiedMs - startMs) / MINUTE) - 10);
  const completedMs = startMs + random.int(15, completedWithin) * MINUTE + random.int(0, 59) * 1000;
  return { modifiedMs, completedMs };
}

function sourceOf(random: Random, visitType: VisitType): string | null {
  if (visitType === 'MV') return random.chance(0.95) ? 'Mystery Guest' : null;
  if (random.chance(0.1)) return null;
  return random.pick(visitType === 'OF' ? FEEDBACK_SOURCES : REVIEW_SOURCES);
}

interface DemoQuestion {
  subject: string;
  score: number | null;
  analysisTag: string | null;
  category: string | null;
  dish: string | null;
  answer: string;
}

interface DemoSection {
  name: string;
  score: number;
  questions: DemoQuestion[];
}

function buildSection(
  random: Random,
  template: SectionTemplate,
  visitType: VisitType,
  scale: number,
  quality: number,
  brand: CatalogueBrand,
  mainDish: string,
): DemoSection {
  // Server names are a mystery guest's question; reviews carry no free text per section.
  const eligible = template.questions.filter(
    (q) => (q.kind !== 'name' || visitType === 'MV') && (q.kind !== 'text' || visitType !== 'TA'),
  );
  const asked = random.sample(eligible, random.int(2, Math.min(6, eligible.length)));
  const sectionQuality = clamp(random.normal(quality, 0.05), 0, 1);
  const context: AnswerContext = { random, section: template, scale, quality: sectionQuality, brand, mainDish };
  const questions = asked.map((q): DemoQuestion => {
    const { score, answer, dish = null } = answerQuestion(q, context);
    // Free-text questions carry no category: they are not analysed as a score.
    const category = score === null ? null : template.category;
    return { subject: q.subject, score, analysisTag: q.tag, category, dish, answer };
  });
  const scored = questions.filter((q) => q.score !== null);
  const score =
    scored.length > 0
      ? round((scored.reduce((sum, q) => sum + (q.score ?? 0), 0) / scored.length / scale) * 100, 1)
      : round(clamp(random.normal(sectionQuality, 0.05), 0, 1) * 100, 1);
  return { name: template.name, score, questions };
}

interface AnswerContext {
  random: Random;
  section: SectionTemplate;
  /** 10 or 100: the questionnaire's score scale. */
  scale: number;
  /** How this section of the visit went, 0..1. */
  quality: number;
  brand: CatalogueBrand;
  mainDish: string;
}

type Answer = { score: number | null; answer: string; dish?: string | null };

function answerQuestion(q: QuestionTemplate, context: AnswerContext): Answer {
  const { random, section, scale, quality, brand, mainDish } = context;
  switch (q.kind) {
    case 'yesno': {
      const yes = random.chance(clamp(quality + 0.08, 0.05, 0.98));
      return { score: yes ? scale : 0, answer: yes ? 'Yes' : 'No' };
    }
    case 'rating':
    case 'dish': {
      const course = q.kind === 'dish' ? (q.course ?? 'Main') : null;
      const dish = course === null ? null : course === 'Main' ? mainDish : random.pick(brand.dishes[course]);
      const value = clamp(random.normal(quality, 0.1), 0, 1);
      if (scale === 100) {
        const ratings = QUESTIONNAIRE.mysteryRatings;
        const { label, score } = ratings.find((band) => value >= band.from) ?? ratings[ratings.length - 1];
        return { dish, score, answer: label };
      }
      const score = Math.round(value * 10);
      return { dish, score, answer: String(score) };
    }
    case 'name':
      return { score: null, answer: random.pick(QUESTIONNAIRE.serverNames) };
    case 'text': {
      const pool = random.normal(quality, 0.1) >= 0.7 ? section.good : section.bad;
      return { score: null, answer: random.pick(pool).replace('{dish}', mainDish.toLowerCase()) };
    }
  }
}

/**
 * Reviews of recent mystery visits: the survey platform re-sends an MV visit with corrected
 * scores within 24 hours of its completion. The last `perClient` MV visits of each client come
 * back with their overall score moved by a few points, so the change feed has re-scored
 * visits to show after the first import.
 */
export function demoReviews(visits: Iterable<Record<string, unknown>>, perClient = 3): Record<string, unknown>[] {
  const reviews = new DemoReviews(perClient);
  for (const visit of visits) reviews.see(visit);
  return reviews.reviews();
}

/**
 * demoReviews of visits seen one at a time, in the order made: it keeps the last `perClient`
 * MV visits of each client only (clients in the order their first visit came).
 */
export class DemoReviews {
  private readonly recent = new Map<unknown, Record<string, unknown>[]>();

  constructor(private readonly perClient = 3) {}

  see(visit: Record<string, unknown>): void {
    const kept = this.recent.get(visit.clientId) ?? [];
    this.recent.set(visit.clientId, kept);
    if (visit.visitType !== 'MV') return;
    kept.push(visit);
    if (kept.length > this.perClient) kept.shift();
  }

  reviews(): Record<string, unknown>[] {
    return rescored([...this.recent.values()].flat());
  }
}

/** The visits with their overall score moved by a few points, up and down in turn. */
function rescored(recent: Record<string, unknown>[]): Record<string, unknown>[] {
  return recent.map((visit, i) => {
    const score = Number(visit.visitScore);
    const moved = round(Math.min(100, Math.max(0, score + (i % 2 === 0 ? 2.5 : -3))), 1);
    return { ...visit, visitScore: moved };
  });
}
