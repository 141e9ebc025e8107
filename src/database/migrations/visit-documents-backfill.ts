import type { QueryRunner } from 'typeorm';
import { renderStoredVisit, type VisitColumns } from '../../visits/visit-json.js';
import { sqliteTimestamp } from '../sqlite-timestamp.js';

/** Visits rendered per round trip: a few MB of documents at most. */
const BATCH = 500;

interface StoredVisitRow extends VisitColumns {
  id: number | string;
  branch_id: string;
}

/**
 * Renders the document of every visit already stored (see VisitDocument), in batches in id
 * order, with the very function that renders them when visits are written: the pages read
 * from them are byte for byte the pages the service rendered before.
 */
export async function backfillVisitDocuments(runner: QueryRunner, postgres: boolean): Promise<void> {
  let n = 0;
  const p = (): string => (postgres ? `$${++n}` : '?');
  let last: number | string | null = null;
  for (;;) {
    n = 0;
    const rows = (await runner.query(
      `SELECT id, branch_id, visit_type, questionnaire_type, visit_score, recommend_score, recommend_comment,
         visit_date_time, modification_date, visit_source, sections, guest_id, opt_in_contact_by_email, opt_in_join_marketing
       FROM visits ${last === null ? '' : `WHERE id > ${p()}`} ORDER BY id LIMIT ${BATCH}`,
      last === null ? [] : [last],
    )) as StoredVisitRow[];
    if (rows.length === 0) return;
    n = 0;
    const params: unknown[] = [];
    const tuples = rows.map((row) => {
      const { standard, plus } = renderStoredVisit(row);
      params.push(row.id, row.branch_id, standard, plus);
      return `(${p()}, ${p()}, ${p()}, ${p()})`;
    });
    await runner.query(`INSERT INTO visit_documents (visit_id, branch_id, standard, plus) VALUES ${tuples.join(', ')}`, params);
    last = rows[rows.length - 1].id;
  }
}

/** A stored visit beside the document stored for it (none: null). */
interface StoredRow extends StoredVisitRow {
  client_id: number | string;
  doc_branch_id: string | null;
  doc_standard: Buffer | null;
  doc_plus: Buffer | null;
}

/**
 * Renders every stored visit's document again and writes those that differ from what is
 * stored: releases that copied an upsert's returned rows back by position wrote, when visits
 * were re-imported out of id order, documents under the wrong visits (docs/decisions.md,
 * "Data"), and the visits' own rows stayed right. A repaired visit takes the next numbers of its
 * client's write sequence, so a copy kept in sync by the change feed receives it again, and
 * its client's data version moves, so no cached page or ETag outlives the repair. Gives the
 * number of documents written.
 */
export async function repairVisitDocuments(runner: QueryRunner, postgres: boolean): Promise<number> {
  const p = (i: number): string => (postgres ? `$${i}` : '?');
  const repaired = new Map<number, (number | string)[]>();
  let count = 0;
  let last: number | string | null = null;
  for (;;) {
    const rows = (await runner.query(
      `SELECT v.id, v.client_id, v.branch_id, v.visit_type, v.questionnaire_type, v.visit_score, v.recommend_score, v.recommend_comment,
         v.visit_date_time, v.modification_date, v.visit_source, v.sections, v.guest_id, v.opt_in_contact_by_email, v.opt_in_join_marketing,
         d.branch_id AS doc_branch_id, d.standard AS doc_standard, d.plus AS doc_plus
       FROM visits v LEFT JOIN visit_documents d ON d.visit_id = v.id
       ${last === null ? '' : `WHERE v.id > ${p(1)}`} ORDER BY v.id LIMIT ${BATCH}`,
      last === null ? [] : [last],
    )) as StoredRow[];
    if (rows.length === 0) break;
    for (const row of rows) {
      const { standard, plus } = renderStoredVisit(row);
      if (row.doc_standard !== null && row.doc_branch_id === row.branch_id && standard.equals(row.doc_standard) && plus.equals(row.doc_plus ?? Buffer.alloc(0))) continue;
      if (row.doc_standard === null) {
        await runner.query(`INSERT INTO visit_documents (visit_id, branch_id, standard, plus) VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)})`, [row.id, row.branch_id, standard, plus]);
      } else {
        await runner.query(`UPDATE visit_documents SET branch_id = ${p(1)}, standard = ${p(2)}, plus = ${p(3)} WHERE visit_id = ${p(4)}`, [row.branch_id, standard, plus, row.id]);
      }
      const clientId = Number(row.client_id);
      const ids = repaired.get(clientId) ?? [];
      ids.push(row.id);
      repaired.set(clientId, ids);
      count++;
    }
    last = rows[rows.length - 1].id;
  }
  // On the feed again, in id order, after everything the client's sequence holds.
  const changedAt = postgres ? new Date() : sqliteTimestamp(new Date());
  for (const [clientId, ids] of [...repaired].sort(([a], [b]) => a - b)) {
    await runner.query(`UPDATE clients SET change_seq = change_seq + ${p(1)}, data_version = data_version + 1 WHERE id = ${p(2)}`, [ids.length, clientId]);
    const [{ s }] = (await runner.query(`SELECT change_seq AS s FROM clients WHERE id = ${p(1)}`, [clientId])) as { s: number | string }[];
    const first = Number(s) - ids.length + 1;
    for (const [i, id] of ids.entries()) {
      await runner.query(`UPDATE visits SET change_seq = ${p(1)}, changed_at = ${p(2)} WHERE id = ${p(3)}`, [first + i, changedAt, id]);
    }
  }
  return count;
}
