import type { ClientDataVersions } from '../clients/data-versions.js';
import { loadConfig } from '../config/app-config.js';
import type { EffectiveSelection } from '../auth/entitlements.js';
import type { DocumentRow } from './visit-json.js';
import { VisitNames } from './visit-names.service.js';
import type { PagePosition, VisitPageQuery, VisitsRepository } from './visits.repository.js';
import { MARK_STRIDE, MARKS_KEPT_BYTES, marksWeight, VisitsService, type VisitsWindow } from './visits.service.js';
import { BodyPool } from '../common/body-pool.js';

/** The names the fake rows are written with: they all are of branch BR. */
const NAMES = { clientId: 1001, clientName: 'Acme', brands: new Map(), branches: new Map([['BR', { code: null, name: 'Leeds' }]]) };

/** Client data versions that are `version.value` for every client, whatever a test moves it to. */
const versionsAt = (version: { value: number }): ClientDataVersions =>
  ({ current: () => Promise.resolve(version.value) }) as unknown as ClientDataVersions;

/** Every visit of client 1001: a credential without brand or type restrictions. */
const ALL: EffectiveSelection = { clientId: 1001, brandIds: null, visitTypes: null };

function query(over: Partial<VisitsWindow> = {}): VisitsWindow {
  return { FromDate: '2026-10-01', ToDate: '2026-10-31', Skip: 0, Take: 100, ...over };
}

/** A repository that counts renders and answers after a moment, with the data version given. */
function repository(version: { value: number }) {
  let renders = 0;
  const repo = {
    names: () => Promise.resolve(NAMES),
    page: async () => {
      renders++;
      await new Promise((r) => setTimeout(r, 20));
    },
  };
  return { repo: repo as unknown as VisitsRepository, versions: versionsAt(version), renders: () => renders };
}

describe('VisitsService pages', () => {
  it('renders a page once for concurrent requests, even with the cache off', async () => {
    const version = { value: 1 };
    const { repo, versions, renders } = repository(version);
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ VISITS_CACHE_MB: '0' }));
    const pages = await Promise.all(Array.from({ length: 5 }, () => service.page(ALL, query(), 'standard')));
    expect(renders()).toBe(1);
    expect(new Set(pages.map((p) => p.body.toString()))).toEqual(new Set(['{"data":{"visits":[]}}']));
    await service.page(ALL, query(), 'standard');
    expect(renders()).toBe(2);
  });

  it('serves a cached page until the client data version moves', async () => {
    const version = { value: 1 };
    const { repo, versions, renders } = repository(version);
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({}));
    const first = await service.page(ALL, query(), 'standard');
    const again = await service.page(ALL, query(), 'standard');
    expect(renders()).toBe(1);
    expect(again.etag).toBe(first.etag);
    await service.page(ALL, query(), 'plus');
    await service.page(ALL, query({ Skip: 100 }), 'standard');
    expect(renders()).toBe(3);
    version.value = 2;
    const changed = await service.page(ALL, query(), 'standard');
    expect(renders()).toBe(4);
    expect(changed.etag).not.toBe(first.etag);
  });

  it("keys a page's ETag with the service's secret: the same page under another key has another ETag", async () => {
    const { repo, versions } = repository({ value: 1 });
    const under = (key: string) => new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ PAGE_TOKEN_KEY: key }));
    const [a, again, b] = await Promise.all([under('a page-token key, first').page(ALL, query(), 'standard'), under('a page-token key, first').page(ALL, query(), 'standard'), under('a page-token key, second').page(ALL, query(), 'standard')]);
    expect(again.etag).toBe(a.etag);
    expect(b.etag).not.toBe(a.etag);
  });
});

describe('VisitsService pages of different entitlements', () => {
  /** Rows of brands 5 and 6 alternately; the fake reads them as the database would, by the selection's brand list. */
  function brandRows(count: number) {
    const all = Array.from({ length: count }, (_, i) => ({ id: 1000 + i, brand: i % 2 === 0 ? 5 : 6, visit_date_time: '2026-10-01T10:00:00', branch_id: 'BR', brand_id: null, standard: '', plus: '' }));
    const selected = (q: { brandIds: readonly number[] | null }) => all.filter((r) => q.brandIds === null || q.brandIds.includes(r.brand));
    const calls = { pages: 0, positions: 0 };
    const repo = {
      names: () => Promise.resolve(NAMES),
      page: (q: VisitPageQuery, each: (row: DocumentRow) => void) => {
        calls.pages++;
        const rows = selected(q);
        const from = (q.after ? rows.findIndex((r) => r.id === q.after!.id) + 1 : 0) + q.skip;
        (rows.slice(from, from + q.take) as unknown as DocumentRow[]).forEach((row) => each(row));
        return Promise.resolve();
      },
      positionAfter: (q: VisitPageQuery, n: number) => {
        calls.positions++;
        const rows = selected(q);
        const row = rows[(q.after ? rows.findIndex((r) => r.id === q.after!.id) + 1 : 0) + n - 1];
        return Promise.resolve(row ? { visitDateTime: row.visit_date_time, id: row.id } : null);
      },
    };
    const ids = (brand: number | null, skip: number, take: number) =>
      selected({ brandIds: brand === null ? null : [brand] }).slice(skip, skip + take).map((r) => r.id);
    return { repo: repo as unknown as VisitsRepository, versions: versionsAt({ value: 1 }), calls, ids };
  }
  const pageIds = (page: { body: Buffer }): number[] =>
    (JSON.parse(page.body.toString()) as { data: { visits: { visitId: number }[] } }).data.visits.map((v) => v.visitId);

  it('never serves a page or a page mark found for one effective selection to another', async () => {
    const { repo, versions, calls, ids } = brandRows(5000);
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({}));
    const brand5: EffectiveSelection = { clientId: 1001, brandIds: [5], visitTypes: null };
    const brand6: EffectiveSelection = { clientId: 1001, brandIds: [6], visitTypes: null };
    const first = await service.page(brand5, query(), 'standard');
    const other = await service.page(brand6, query(), 'standard');
    expect(pageIds(first)).toEqual(ids(5, 0, 100));
    expect(pageIds(other)).toEqual(ids(6, 0, 100));
    expect(other.etag).not.toBe(first.etag);
    expect(pageIds(await service.page(ALL, query(), 'standard'))).toEqual(ids(null, 0, 100));
    expect(calls.pages).toBe(3);
    // Deep pages: each selection finds its own marks.
    expect(pageIds(await service.page(ALL, query({ Skip: 2100, Take: 5 }), 'standard'))).toEqual(ids(null, 2100, 5));
    expect(calls.positions).toBe(2);
    expect(pageIds(await service.page(brand6, query({ Skip: 2100, Take: 5 }), 'standard'))).toEqual(ids(6, 2100, 5));
    expect(calls.positions).toBe(4);
    expect(pageIds(await service.page(brand5, query({ Skip: 2100, Take: 5 }), 'standard'))).toEqual(ids(5, 2100, 5));
    expect(calls.positions).toBe(6);
  });
});

describe('VisitsService page marks', () => {
  /** A selection of `count` rows, all at one time (so the id decides the order), with the calls made. */
  function rows(count: number, version: { value: number }, failMarks = { times: 0 }) {
    const all = Array.from({ length: count }, (_, i) => ({ id: 1000 + i, visit_date_time: '2026-10-01T10:00:00', branch_id: 'BR', brand_id: null, standard: '', plus: '' }));
    const indexAfter = (after?: PagePosition): number => (after ? all.findIndex((r) => r.id === after.id) + 1 : 0);
    const calls = { pages: [] as VisitPageQuery[], positions: 0 };
    const repo = {
      names: () => Promise.resolve(NAMES),
      page: (q: VisitPageQuery, each: (row: DocumentRow) => void) => {
        calls.pages.push(q);
        const from = indexAfter(q.after) + q.skip;
        all.slice(from, from + q.take).forEach((row) => each(row));
        return Promise.resolve();
      },
      positionAfter: (q: { after?: PagePosition }, n: number) => {
        calls.positions++;
        if (failMarks.times > 0) {
          failMarks.times--;
          return Promise.reject(new Error('connection lost'));
        }
        const row = all[indexAfter(q.after) + n - 1];
        return Promise.resolve(row ? { visitDateTime: row.visit_date_time, id: row.id } : null);
      },
    };
    return { repo: repo as unknown as VisitsRepository, versions: versionsAt(version), calls, ids: (skip: number, take: number) => all.slice(skip, skip + take).map((r) => r.id) };
  }
  const pageIds = (page: { body: Buffer }): number[] =>
    (JSON.parse(page.body.toString()) as { data: { visits: { visitId: number }[] } }).data.visits.map((v) => v.visitId);

  it('serves every page from the mark before it, finding each mark once', async () => {
    const version = { value: 1 };
    const { repo, versions, calls, ids } = rows(4500, version);
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ VISITS_CACHE_MB: '0' }));
    for (let skip = 0; skip < 4600; skip += 300) {
      expect(pageIds(await service.page(ALL, query({ Skip: skip, Take: 300 }), 'standard'))).toEqual(ids(skip, 300));
    }
    expect(calls.positions).toBe(4);
    expect(Math.max(...calls.pages.map((q) => q.skip))).toBeLessThan(MARK_STRIDE);
    expect(pageIds(await service.page(ALL, query({ Skip: 2500, Take: 7 }), 'plus'))).toEqual(ids(2500, 7));
    expect(pageIds(await service.page(ALL, query({ Skip: 9000, Take: 7 }), 'plus'))).toEqual([]);
    expect(calls.positions).toBe(5);
    // Other data, other marks.
    version.value = 2;
    expect(pageIds(await service.page(ALL, query({ Skip: 2500, Take: 7 }), 'standard'))).toEqual(ids(2500, 7));
    expect(calls.positions).toBe(7);
  });

  it('weighs the marks kept in bytes, a selection without a mark at what its entry takes, so that short selections cannot fill the memory', async () => {
    const version = { value: 1 };
    const { repo, versions, calls } = rows(10, version);
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ VISITS_CACHE_MB: '0' }));
    // A selection of 10 rows asked for past its first 1,000, at each data version: one entry each, no mark.
    for (let v = 1; v <= 100; v++) {
      version.value = v;
      expect(pageIds(await service.page(ALL, query({ Skip: MARK_STRIDE, Take: 5 }), 'standard'))).toEqual([]);
    }
    expect(calls.positions).toBe(100);
    // Some 300 bytes each (200,000 took 63 MB): counted as one mark of 100 bytes, the bound let 200,000 of them in.
    expect(service.marksBytes).toBeGreaterThanOrEqual(100 * 280);
    expect(service.marksBytes).toBeLessThan(100 * 400);
    expect(marksWeight({ marks: new Array(1000) }, 'k')).toBeGreaterThanOrEqual(1000 * 100);
    expect(MARKS_KEPT_BYTES / marksWeight({ marks: [] }, '1001|1|2026-10-01|2026-10-31||')).toBeLessThan(80_000);
  });

  it('finds the marks for a jump far into the selection, then pages before it need none', async () => {
    const { repo, versions, calls, ids } = rows(3100, { value: 1 });
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ VISITS_CACHE_MB: '0' }));
    expect(pageIds(await service.page(ALL, query({ Skip: 3050, Take: 100 }), 'standard'))).toEqual(ids(3050, 100));
    expect(calls.positions).toBe(3);
    expect(pageIds(await service.page(ALL, query({ Skip: 1999, Take: 2 }), 'standard'))).toEqual(ids(1999, 2));
    expect(calls.positions).toBe(3);
  });

  it('serves a page whose mark is known while marks further on are still being found', async () => {
    const { repo, versions, ids } = rows(6000, { value: 1 });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const positionAfter = repo.positionAfter.bind(repo);
    let calls = 0;
    repo.positionAfter = (q, n) => (++calls > 1 ? gate.then(() => positionAfter(q, n)) : positionAfter(q, n));
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ VISITS_CACHE_MB: '0' }));
    expect(pageIds(await service.page(ALL, query({ Skip: 1000, Take: 5 }), 'standard'))).toEqual(ids(1000, 5));
    const far = service.page(ALL, query({ Skip: 5000, Take: 5 }), 'standard');
    expect(pageIds(await service.page(ALL, query({ Skip: 1500, Take: 5 }), 'standard'))).toEqual(ids(1500, 5));
    open();
    expect(pageIds(await far)).toEqual(ids(5000, 5));
  });

  it('fails only the request whose mark could not be found, and finds it for the next', async () => {
    const fail = { times: 1 };
    const { repo, versions, ids } = rows(2500, { value: 1 }, fail);
    const service = new VisitsService(repo, new VisitNames(repo, new BodyPool(8 * 1024 * 1024)), versions, loadConfig({ VISITS_CACHE_MB: '0' }));
    await expect(service.page(ALL, query({ Skip: 1500, Take: 10 }), 'standard')).rejects.toThrow('connection lost');
    expect(pageIds(await service.page(ALL, query({ Skip: 1500, Take: 10 }), 'standard'))).toEqual(ids(1500, 10));
  });
});

describe('VisitsService page bodies', () => {
  /** Rows of about 2 KB each that name their place: a page of 100 lies in a buffer of the pool. */
  function largeRows() {
    const repo = {
      names: () => Promise.resolve(NAMES),
      page: (q: VisitPageQuery, each: (row: DocumentRow) => void) => {
        for (let i = 0; i < q.take; i++) {
          const id = q.skip + i + 1;
          each({ id, brand_id: null, branch_id: 'BR', standard: `,"note":"${`row ${id} `.repeat(220)}"` });
        }
        return new Promise<void>((resolve) => setTimeout(resolve, 5));
      },
      positionAfter: () => Promise.resolve(null),
    };
    return repo as unknown as VisitsRepository;
  }
  const MB = 1024 * 1024;
  const nextMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it('gives a shared body back to the pool only when every request holding it has released it', async () => {
    const repo = largeRows();
    const pool = new BodyPool(16 * MB);
    const service = new VisitsService(repo, new VisitNames(repo, pool), versionsAt({ value: 1 }), loadConfig({ VISITS_CACHE_MB: '0' }));
    const pages = await Promise.all([1, 2, 3].map(() => service.page(ALL, query({ Take: 100 }), 'standard')));
    expect(new Set(pages.map((p) => p.body.buffer)).size).toBe(1);
    const bytes = Buffer.from(pages[0].body);
    expect(bytes.length).toBeGreaterThan(100_000);
    await nextMacrotask();
    pages[0].release();
    pages[1].release();
    pages[1].release();
    expect(pool.freeBytes).toBe(0);
    // While one request still holds it, other pages are written into other buffers.
    const other = await service.page(ALL, query({ Skip: 100, Take: 100 }), 'standard');
    expect(other.body.buffer).not.toBe(pages[2].body.buffer);
    expect(pages[2].body.equals(bytes)).toBe(true);
    pages[2].release();
    expect(pool.freeBytes).toBe(pages[2].body.buffer.byteLength);
    other.release();
    expect(pool.freeBytes).toBe(pages[2].body.buffer.byteLength + other.body.buffer.byteLength);
  });

  it('gives a body back as soon as its last request releases it, so that the next render of the same turn writes into it', async () => {
    const repo = largeRows();
    const pool = new BodyPool(16 * MB);
    const service = new VisitsService(repo, new VisitNames(repo, pool), versionsAt({ value: 1 }), loadConfig({ VISITS_CACHE_MB: '0' }));
    const first = await service.page(ALL, query({ Take: 100 }), 'standard');
    first.release();
    expect(pool.freeBytes).toBe(first.body.buffer.byteLength);
    // The next page's rows are written before anything else of the event loop runs.
    const second = await service.page(ALL, query({ Skip: 100, Take: 100 }), 'standard');
    expect(second.body.buffer).toBe(first.body.buffer);
    expect(second.body.subarray(0, 40).toString()).toContain('"visitId":101');
    second.release();
  });

  it('keeps a cached page intact while other pages are written into buffers given back', async () => {
    const repo = largeRows();
    const pool = new BodyPool(16 * MB);
    const service = new VisitsService(repo, new VisitNames(repo, pool), versionsAt({ value: 1 }), loadConfig({ VISITS_CACHE_MB: '8' }));
    // The first render sizes its buffer from a guess; later ones from the pages before.
    for (let skip = 0; skip < 300; skip += 100) (await service.page(ALL, query({ Skip: skip, Take: 100 }), 'standard')).release();
    const first = await service.page(ALL, query({ Skip: 0, Take: 100 }), 'standard');
    const bytes = Buffer.from(first.body);
    first.release();
    await nextMacrotask();
    for (let skip = 300; skip < 1000; skip += 100) {
      const page = await service.page(ALL, query({ Skip: skip, Take: 100 }), 'standard');
      page.release();
      await nextMacrotask();
    }
    expect(pool.freeBytes).toBeGreaterThan(0);
    const cached = await service.page(ALL, query({ Skip: 0, Take: 100 }), 'standard');
    expect(cached.body.equals(bytes)).toBe(true);
    expect(service.cachedBytes).toBeGreaterThanOrEqual(10 * bytes.length);
  });
});
