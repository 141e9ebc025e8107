import { loadConfig } from '../config/app-config.js';
import { VisitsQueryDto } from './dto/visits-query.dto.js';
import type { VisitPageQuery, VisitRow, VisitsRepository } from './visits.repository.js';
import { VisitsService } from './visits.service.js';

function query(over: Partial<VisitsQueryDto> = {}): VisitsQueryDto {
  return Object.assign(new VisitsQueryDto(), { SvcClientId: 1001, FromDate: '2026-10-01', ToDate: '2026-10-31', Skip: 0, Take: 100, ...over });
}

/** A repository that counts renders and answers after a moment, with the data version given. */
function repository(version: { value: number }) {
  let renders = 0;
  const repo = {
    dataVersion: () => Promise.resolve(version.value),
    page: async () => {
      renders++;
      await new Promise((r) => setTimeout(r, 20));
      return [];
    },
  };
  return { repo: repo as unknown as VisitsRepository, renders: () => renders };
}

describe('VisitsService pages', () => {
  it('renders a page once for concurrent requests, even with the cache off', async () => {
    const version = { value: 1 };
    const { repo, renders } = repository(version);
    const service = new VisitsService(repo, loadConfig({ VISITS_CACHE_MB: '0' }));
    const pages = await Promise.all(Array.from({ length: 5 }, () => service.page(query(), 'standard')));
    expect(renders()).toBe(1);
    expect(new Set(pages.map((p) => p.body.toString()))).toEqual(new Set(['{"data":{"visits":[]}}']));
    await service.page(query(), 'standard');
    expect(renders()).toBe(2);
  });

  it('serves a cached page until the client data version moves', async () => {
    const version = { value: 1 };
    const { repo, renders } = repository(version);
    const service = new VisitsService(repo, loadConfig({}));
    const first = await service.page(query(), 'standard');
    const again = await service.page(query(), 'standard');
    expect(renders()).toBe(1);
    expect(again.etag).toBe(first.etag);
    await service.page(query(), 'plus');
    await service.page(query({ Skip: 100 }), 'standard');
    expect(renders()).toBe(3);
    version.value = 2;
    const changed = await service.page(query(), 'standard');
    expect(renders()).toBe(4);
    expect(changed.etag).not.toBe(first.etag);
  });
});

describe('VisitsService page starts', () => {
  /** A repository that records each page query and answers `take` rows from `skip` on, of 10. */
  function recording(version: { value: number }) {
    const queries: VisitPageQuery[] = [];
    const row = (n: number) => ({ id: n, visit_date_time: `2026-10-01T10:00:0${n}`, sections: '[]' }) as VisitRow;
    const repo = {
      dataVersion: () => Promise.resolve(version.value),
      page: (q: VisitPageQuery) => {
        queries.push(q);
        return Promise.resolve(Array.from({ length: Math.max(0, Math.min(q.take, 10 - q.skip)) }, (_, i) => row(q.skip + i)));
      },
    };
    return { repo: repo as unknown as VisitsRepository, queries };
  }

  it('starts the next page after the last row of the page before, and skips when it does not know', async () => {
    const version = { value: 1 };
    const { repo, queries } = recording(version);
    const service = new VisitsService(repo, loadConfig({ VISITS_CACHE_MB: '0' }));
    await service.page(query({ Skip: 0, Take: 4 }), 'standard');
    await service.page(query({ Skip: 4, Take: 4 }), 'plus');
    await service.page(query({ Skip: 6, Take: 4 }), 'standard');
    await service.page(query({ Skip: 8, Take: 4, SvcBrandId: 5 }), 'standard');
    expect(queries.map((q) => q.after)).toEqual([undefined, { visitDateTime: '2026-10-01T10:00:03', id: 3 }, undefined, undefined]);
    version.value = 2;
    await service.page(query({ Skip: 4, Take: 4 }), 'standard');
    expect(queries.at(-1)?.after).toBeUndefined();
  });
});
