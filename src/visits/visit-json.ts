import { ByteWriter } from '../common/byte-writer.js';
import type { VisitRow } from './visits.repository.js';

const text = (value: string | null | undefined): string => (value === null || value === undefined ? 'null' : JSON.stringify(value));
const number = (value: number | string | null): string => (value === null ? 'null' : JSON.stringify(Number(value)));
const flag = (value: boolean | number | null | undefined): string =>
  value === null || value === undefined ? 'null' : value === true || value === 1 ? 'true' : 'false';

/** Bytes of a visit besides its sections and comment, a generous guess: sizes the page buffer up front. */
const FIELDS_BYTES = 512;

/**
 * Writes a visit as JSON in the interface's field order. The sections are stored as
 * validated JSON text and are copied in as they are, so a page costs no per-question work.
 * Plus adds `guestId` and `optIns`; standard never has them.
 */
function writeVisit(out: ByteWriter, row: VisitRow, plus: boolean): void {
  out.text(
    `{"visitId":${number(row.id)},"clientId":${number(row.client_id)},"clientName":${text(row.client_name)}` +
      `,"brandName":${text(row.brand_name)},"branchId":${text(row.branch_id)},"branchCode":${text(row.branch_code)}` +
      `,"branchName":${text(row.branch_name)},"visitType":${text(row.visit_type)}` +
      `,"questionnaireType":${text(row.questionnaire_type)},"visitScore":${number(row.visit_score)}` +
      `,"recommendScore":${number(row.recommend_score)},"recommendComment":${text(row.recommend_comment)}` +
      `,"visitDateTime":${text(row.visit_date_time)},"modificationDate":${text(row.modification_date)}` +
      `,"visitSource":${text(row.visit_source)},"sections":`,
  );
  out.text(row.sections);
  out.text(
    plus
      ? `,"guestId":${text(row.guest_id)},"optIns":{"contactByEmail":${flag(row.opt_email)},"joinMarketing":${flag(row.opt_marketing)}}}`
      : '}',
  );
}

/**
 * The response body `{ "data": { "visits": [...] } }`, written straight into one buffer; with
 * `after`, a page of the change feed: `paging.after` follows the data.
 */
export function visitsPageJson(rows: VisitRow[], plus: boolean, after?: string): Buffer {
  let expected = 32 + (after?.length ?? 0);
  for (const row of rows) expected += row.sections.length + (row.recommend_comment?.length ?? 0) + FIELDS_BYTES;
  const out = new ByteWriter(expected);
  out.text('{"data":{"visits":[');
  rows.forEach((row, i) => {
    if (i > 0) out.text(',');
    writeVisit(out, row, plus);
  });
  return out.text(after === undefined ? ']}}' : `]},"paging":{"after":${JSON.stringify(after)}}}`).result();
}
