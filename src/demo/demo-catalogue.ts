import { addDays } from '../common/clock.js';
import clientsData from './demo-clients.json' with { type: 'json' };
import menusData from './demo-menus.json' with { type: 'json' };
import questionnaireData from './demo-questionnaire.json' with { type: 'json' };

/**
 * The demo catalogue, kept as data in the JSON files beside this one: the two hospitality
 * groups with their brands, dishes and branches (demo-clients.json), the questionnaire the
 * visits answer (demo-questionnaire.json) and the menus (demo-menus.json, dated in days from
 * "today"). This module gives them their types and their import shapes.
 */

export type Course = 'Starter' | 'Main' | 'Dessert';

export interface CatalogueBranch {
  id: string;
  name: string;
  branchCode: string | null;
  /** The town guests' comments name. */
  town: string;
  /** How well the branch does, 0..1; when absent the generator draws one (0.72 to 0.88). */
  quality?: number;
}

export interface CatalogueBrand {
  id: number;
  name: string;
  /** What guests order, by course: the dishes their answers and comments name. */
  dishes: Record<Course, readonly string[]>;
  branches: readonly CatalogueBranch[];
}

export interface CatalogueClient {
  id: number;
  name: string;
  brands: readonly CatalogueBrand[];
}

export type QuestionKind = 'yesno' | 'rating' | 'dish' | 'text' | 'name';

export interface QuestionTemplate {
  subject: string;
  tag: string | null;
  kind: QuestionKind;
  /** The course a `dish` question is about. */
  course?: Course;
}

export interface SectionTemplate {
  name: string;
  category: string;
  questions: readonly QuestionTemplate[];
  /** Free-text answers by how the visit went; `{dish}` is replaced by the main dish. */
  good: readonly string[];
  bad: readonly string[];
}

export interface Questionnaire {
  sections: readonly SectionTemplate[];
  /** Sections every visit answers; the others are drawn. */
  alwaysAsked: readonly string[];
  /** A mystery guest's rating: the first band whose `from` the answer's quality reaches. */
  mysteryRatings: readonly { from: number; label: string; score: number }[];
  serverNames: readonly string[];
  /** Recommendation comments by the score given (9-10, 7-8, 0-6); `{place}` and `{dish}` are replaced. */
  recommendComments: { promoter: readonly string[]; passive: readonly string[]; detractor: readonly string[] };
}

interface CatalogueDish {
  code: string;
  type: string;
  description: string;
  keywords: readonly string[];
  /** The colour of its placeholder picture. */
  color: string;
  expiryDaysFromToday?: number;
}

interface CatalogueMenu {
  clientId: number;
  id: number;
  name: string;
  startDaysFromToday: number;
  endDaysFromToday: number | null;
  dishes: readonly CatalogueDish[];
}

export const CLIENTS: readonly CatalogueClient[] = clientsData;
// A JSON module's type says `string` where these types name the few kinds and courses the
// generator knows; the unit test of the catalogue checks the file holds only those.
export const QUESTIONNAIRE: Questionnaire = questionnaireData as Questionnaire;
const MENUS: readonly CatalogueMenu[] = menusData;

/** The demo clients with their brands and branches (branches in the branch import shape). */
export interface DemoClient {
  id: number;
  name: string;
  brands: { id: number; name: string }[];
  branches: { id: string; name: string; branchCode: string | null; brandId: number }[];
}

export function demoClients(): DemoClient[] {
  return CLIENTS.map((client) => ({
    id: client.id,
    name: client.name,
    brands: client.brands.map((b) => ({ id: b.id, name: b.name })),
    branches: client.brands.flatMap((brand) =>
      brand.branches.map((b) => ({ id: b.id, name: b.name, branchCode: b.branchCode, brandId: brand.id })),
    ),
  }));
}

export interface DemoDish {
  code: string;
  description: string;
  type: string;
  order: number;
  expiryDate: string | null;
  keywords: string[];
  image: { file: string; format: 'jpeg' | 'png' | 'webp'; color: string; width: number; height: number };
}

export interface DemoMenu {
  clientId: number;
  id: number;
  name: string;
  startDate: string;
  endDate: string | null;
  dishes: DemoDish[];
}

const IMAGE_FORMATS = ['jpeg', 'png', 'webp'] as const;
const EXTENSIONS = { jpeg: 'jpg', png: 'png', webp: 'webp' } as const;

/** A menu's dishes in their order; their pictures take each format and two sizes in turn. */
function dishes(today: string, rows: readonly CatalogueDish[]): DemoDish[] {
  return rows.map((row, i) => {
    const format = IMAGE_FORMATS[i % IMAGE_FORMATS.length] ?? 'jpeg';
    const large = i % 2 === 0;
    return {
      code: row.code,
      description: row.description,
      type: row.type,
      order: i + 1,
      expiryDate: row.expiryDaysFromToday === undefined ? null : addDays(today, row.expiryDaysFromToday),
      keywords: [...row.keywords],
      image: { file: `${row.code}.${EXTENSIONS[format]}`, format, color: row.color, width: large ? 400 : 320, height: large ? 300 : 240 },
    };
  });
}

/** Throws unless `date` is a calendar date `yyyy-mm-dd` (the day the demo data is dated around). */
export function requireCalendarDate(date: string): void {
  let valid = /^\d{4}-\d{2}-\d{2}$/.test(date);
  try {
    valid &&= addDays(date, 0) === date;
  } catch {
    valid = false;
  }
  if (!valid) throw new Error(`expected a calendar date yyyy-mm-dd: '${date}'`);
}

/** The demo menus, dated around `today` (yyyy-mm-dd). Image files are named, not written. */
export function demoMenus(today: string): DemoMenu[] {
  requireCalendarDate(today);
  return MENUS.map((menu) => ({
    clientId: menu.clientId,
    id: menu.id,
    name: menu.name,
    startDate: addDays(today, menu.startDaysFromToday),
    endDate: menu.endDaysFromToday === null ? null : addDays(today, menu.endDaysFromToday),
    dishes: dishes(today, menu.dishes),
  }));
}
