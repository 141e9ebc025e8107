import type { QueryRunner } from 'typeorm';
import { renderStoredVisit, type VisitColumns } from '../../visits/visit-json.js';

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
