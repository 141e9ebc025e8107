import { RecordReader } from '../common/record-reader.js';
import { Visit } from './entities/visit.entity.js';

/** A visit read from an import record, before its references are checked. */
export interface VisitRecord {
  visit: Visit;
  /** Whether the record named its own modificationDate. */
  hasModificationDate: boolean;
}

const MAX_TEXT = 10_000;

/** Why each visit record of a CSV file is refused. */
const CSV_SECTIONS = "'sections' cannot be written in CSV, which has no nesting: import visits as NDJSON or a JSON array.";

function readQuestion(parent: RecordReader, value: unknown, at: string): Record<string, unknown> {
  const q = parent.nested(value, at);
  const question = {
    subject: q.string('subject', { max: 1000 }),
    score: q.number('score', { required: false }),
    analysisTag: q.string('analysisTag', { max: 200, required: false }),
    category: q.string('category', { max: 200, required: false }),
    dish: q.string('dish', { max: 200, required: false }),
    answer: q.string('answer', { max: MAX_TEXT, required: false }),
  };
  parent.adopt(q);
  return question;
}

function readSection(parent: RecordReader, value: unknown, at: string): Record<string, unknown> {
  const s = parent.nested(value, at);
  const name = s.string('name', { max: 200 });
  const score = s.number('score', { required: false });
  const questions = (s.array('questions') ?? []).map((q, i) => readQuestion(s, q, `questions[${i}].`));
  parent.adopt(s);
  return { name, score, questions };
}

/**
 * Validates one import record in the interface's visit shape (plus `brandId`, `guestId`,
 * `optIns`, `completedAt`). Names (client, brand, branch) in the record are not stored:
 * responses take them from the client, brand and branch tables.
 */
export function readVisitRecord(value: unknown, textValues = false): { record?: VisitRecord; errors: string[] } {
  const r = new RecordReader(value, { textValues });
  const visit = new Visit();
  visit.id = r.int('visitId', { min: 1 }) ?? 0;
  visit.clientId = r.id('clientId') ?? 0;
  visit.brandId = r.id('brandId', { required: false });
  visit.branchId = r.string('branchId', { max: 64 }) ?? '';
  visit.visitType = r.string('visitType', { pattern: /^[A-Za-z]{2}$/, patternText: 'must be 2 alpha characters' })?.toUpperCase() ?? '';
  visit.questionnaireType = r.string('questionnaireType', { max: 100 }) ?? '';
  visit.visitScore = r.number('visitScore', { min: 0, max: 100 }) ?? 0;
  visit.recommendScore = r.number('recommendScore', { required: false, min: 0, max: 10 });
  visit.recommendComment = r.string('recommendComment', { max: MAX_TEXT, required: false });
  visit.visitDateTime = r.localDateTime('visitDateTime') ?? '';
  visit.visitDate = visit.visitDateTime.slice(0, 10);
  const modification = r.localDateTime('modificationDate', { required: false });
  visit.modificationDate = modification ?? '';
  visit.visitSource = r.string('visitSource', { max: 100, required: false });
  // A CSV row (every value text) cannot nest: its sections are said to be none a CSV file can
  // hold, not to be missing or no array, which tells the operator nothing of what to send instead.
  if (textValues) r.errors.push(CSV_SECTIONS);
  const sections = textValues ? [] : (r.array('sections') ?? []).map((s, i) => readSection(r, s, `sections[${i}].`));
  visit.sections = JSON.stringify(sections);
  visit.guestId = r.string('guestId', { max: 100, required: false });
  // Only online feedback (OF) carries a guest: a mystery or third-party visit has none to show.
  if (visit.guestId !== null && visit.visitType !== '' && visit.visitType !== 'OF') {
    r.errors.push(`'guestId' is carried by OF visits only, not by a visit of type '${visit.visitType}'.`);
  }
  const optIns = r.raw('optIns');
  if (optIns === undefined || optIns === null) {
    visit.optInContactByEmail = null;
    visit.optInJoinMarketing = null;
  } else {
    const o = r.nested(optIns, 'optIns.');
    visit.optInContactByEmail = o.boolean('contactByEmail');
    visit.optInJoinMarketing = o.boolean('joinMarketing');
    r.adopt(o);
  }
  visit.completedAt = r.instant('completedAt');
  if (!r.ok) return { errors: r.errors };
  return { record: { visit, hasModificationDate: modification !== null }, errors: [] };
}
