import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BranchesService } from '../../src/branches/branches.service.js';
import { addDays, localDate } from '../../src/common/clock.js';
import type { ImportReport } from '../../src/common/import-report.js';
import { VisitsImportService } from '../../src/visits/visits-import.service.js';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { issueCredential, seedClients, tokenFor } from './auth.js';
import { startTestApp, type TestApp } from './test-app.js';

export type VisitRecord = Record<string, unknown> & {
  visitId: number;
  clientId: number;
  brandId: number | null;
  visitType: string;
  visitDateTime: string;
};

/** A change-feed page as the feed answers it, of visits of the shape a test reads. */
export interface FeedPage<V> {
  data: { visits: V[]; removed?: { visitId: number }[] };
  paging: { after: string };
}

const dir = mkdtempSync(join(tmpdir(), 'visits-fixture-'));

export async function importVisits(t: TestApp, records: unknown[]): Promise<void> {
  const file = join(dir, `visits-${Date.now()}-${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n'));
  const report = await t.app.get(VisitsImportService).importFile(file);
  if (report.rejected.length > 0) throw new Error(`fixture rejected: ${JSON.stringify(report.rejected.slice(0, 2))}`);
}

/** Imports a client's branches as the operator's command does (visits follow a branch moved to another brand); the report. */
export function importBranches(t: TestApp, clientId: number, file: string): Promise<ImportReport> {
  return t.app.get(BranchesService).importFile(clientId, file);
}

/** Clients 1001 and 1002 (seedClients) and one branch of 1001: B-1, Leeds (LDS-01), of brand 5. */
export async function seedOneBranch(t: TestApp): Promise<void> {
  await seedClients(t);
  const file = join(dir, `branches-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify([{ id: 'B-1', name: 'Leeds', branchCode: 'LDS-01', brandId: 5 }]));
  await importBranches(t, 1001, file);
}

/** A mystery visit of branch B-1 (see seedOneBranch) on `day`, without sections; `fields` replace its own. */
export function branchVisit(visitId: number, day: string, fields: Record<string, unknown> = {}): VisitRecord {
  return {
    visitId,
    clientId: 1001,
    brandId: 5,
    branchId: 'B-1',
    visitType: 'MV',
    questionnaireType: 'Mystery Visit',
    visitScore: 80,
    recommendScore: 7,
    recommendComment: `visit ${visitId}`,
    visitDateTime: `${day}T12:00:00`,
    modificationDate: `${day}T12:30:00`,
    visitSource: 'Web',
    sections: [],
    guestId: null,
    optIns: null,
    completedAt: null,
    ...fields,
  };
}

/**
 * Clients 1001 (brands 5, 6) and 1002 (brand 21), branches, and visits on each of the
 * 40 days before today (in RESULTS_TIMEZONE), several at the same minute so the visitId
 * tie-break matters. Returns the records as imported.
 */
export async function seedVisits(t: TestApp): Promise<{ visits: VisitRecord[]; today: string }> {
  await seedClients(t);
  const clients = (await import('../../src/clients/clients.service.js')).ClientsService;
  await t.app.get(clients).addBrand(1001, 6, 'Acme Pizzeria');
  const branchFile = (rows: unknown[]): string => {
    const file = join(dir, `branches-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(rows));
    return file;
  };
  await importBranches(
    t,
    1001,
    branchFile([
      { id: 'B-1', name: 'Leeds', branchCode: 'LDS-01', brandId: 5 },
      { id: 'B-2', name: 'York', branchCode: null, brandId: 6 },
    ]),
  );
  await importBranches(t, 1002, branchFile([{ id: 'B-9', name: 'Hull', branchCode: 'HUL', brandId: 21 }]));

  const today = localDate(t.config.RESULTS_TIMEZONE);
  const types = ['MV', 'OF', 'TA'];
  const visits: VisitRecord[] = [];
  let id = 5000;
  for (let day = 40; day >= 1; day--) {
    const date = addDays(today, -day);
    for (let k = 0; k < 3; k++) {
      id += 7;
      const type = types[(day + k) % 3];
      const branch = k === 2 ? 'B-2' : 'B-1';
      visits.push({
        // Ids not in time order, and two visits at the same minute: order is visitDateTime, then visitId.
        visitId: k === 1 ? id + 1000 : id,
        clientId: 1001,
        brandId: branch === 'B-2' ? 6 : 5,
        branchId: branch,
        visitType: type,
        questionnaireType: type === 'MV' ? 'Mystery Visit - Dinner' : 'Online Feedback',
        visitScore: 50 + ((day * 7 + k) % 50) + 0.5,
        recommendScore: k === 0 ? null : (day + k) % 11,
        recommendComment: k === 0 ? null : `Comment ${day}-${k} with "quotes" and ünïcode`,
        visitDateTime: `${date}T${k === 2 ? '12:00:00' : '19:30:00'}`,
        modificationDate: `${date}T23:00:00`,
        visitSource: k === 2 ? null : 'Web',
        sections: [
          {
            name: 'Food',
            score: 80,
            questions: [
              { subject: 'Steak cooked as ordered?', score: 10, analysisTag: 'FOOD_COOK', category: 'Food', dish: 'Ribeye', answer: 'Yes' },
              { subject: 'Anything else?', score: null, analysisTag: null, category: null, dish: null, answer: 'Lovely\nevening' },
            ],
          },
        ],
        guestId: type === 'OF' ? `G-${id}` : null,
        optIns: type === 'OF' ? { contactByEmail: k !== 1, joinMarketing: k === 1 ? null : false } : null,
        completedAt: `${date}T22:00:00Z`,
      });
    }
  }
  visits.push({
    visitId: 99001,
    clientId: 1002,
    brandId: 21,
    branchId: 'B-9',
    visitType: 'MV',
    questionnaireType: 'Mystery Visit - Lunch',
    visitScore: 70,
    recommendScore: 8,
    recommendComment: 'Fine.',
    visitDateTime: `${addDays(today, -3)}T13:00:00`,
    modificationDate: `${addDays(today, -3)}T20:00:00`,
    visitSource: 'Mystery Guest',
    sections: [],
    guestId: null,
    optIns: null,
    completedAt: null,
  });
  await importVisits(t, visits);
  return { visits, today };
}

/**
 * The ids the interface promises for a filter, in its order. `brandIds` is the list of brands
 * a restricted credential may read (a visit without a brand is in none).
 */
export function expectedIds(
  visits: VisitRecord[],
  f: { clientId: number; from: string; to: string; brandId?: number; brandIds?: number[]; types?: string[] },
): number[] {
  return visits
    .filter((v) => v.clientId === f.clientId)
    .filter((v) => v.visitDateTime.slice(0, 10) >= f.from && v.visitDateTime.slice(0, 10) <= f.to)
    .filter((v) => f.brandId === undefined || v.brandId === f.brandId)
    .filter((v) => f.brandIds === undefined || (v.brandId !== null && f.brandIds.includes(v.brandId)))
    .filter((v) => !f.types || f.types.includes(v.visitType))
    .sort((a, b) => (a.visitDateTime < b.visitDateTime ? -1 : a.visitDateTime > b.visitDateTime ? 1 : a.visitId - b.visitId))
    .map((v) => v.visitId);
}

/** An app holding the visits of `seedVisits`, with a partner credential of client 1001 and its token. */
export interface VisitsApp {
  t: TestApp;
  visits: VisitRecord[];
  today: string;
  partner: IssuedCredential;
  token: string;
}

export async function startVisitsApp(env: Record<string, string> = {}): Promise<VisitsApp> {
  // No credential cache: a test that changes a credential sees the change at once.
  const t = await startTestApp({ AUTH_CACHE_SECONDS: '0', ...env });
  const { visits, today } = await seedVisits(t);
  const partner = await issueCredential(t);
  return { t, visits, today, partner, token: await tokenFor(t.http, partner) };
}
