import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { addDays } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import type { VisitsQueryDto } from './dto/visits-query.dto.js';
import { visitsPageJson } from './visit-json.js';
import { VisitsRepository, type PagePosition } from './visits.repository.js';

export type VisitsVariant = 'standard' | 'plus';

/** A rendered page and the validator it is served with. */
export interface VisitsPage {
  body: Buffer;
  etag: string;
}

/** Page starts remembered: about 150 bytes each, so a few MB at most. */
const SEEK_ENTRIES = 20_000;

@Injectable()
export class VisitsService {
  /** Rendered pages, least recently used out first, within VISITS_CACHE_MB; none when 0. */
  private readonly cache: LRUCache<string, Buffer> | null;
  /** Renders under way: concurrent requests for one page wait for a single render. */
  private readonly rendering = new Map<string, Promise<Buffer>>();
  /**
   * Where a page starts, by query and Skip: the position of the row before it, learnt from
   * the page before it. A partner paging through a range with Skip = 0, Take, 2 Take, ...
   * then gets every page by an index seek, at the cost of the first page, instead of an
   * OFFSET that passes over more entries with each page.
   */
  private readonly seeks = new LRUCache<string, PagePosition>({ max: SEEK_ENTRIES });

  constructor(
    private readonly repo: VisitsRepository,
    config: AppConfig,
  ) {
    const budget = config.VISITS_CACHE_MB * 1024 * 1024;
    this.cache =
      budget > 0 ? new LRUCache({ maxSize: budget, maxEntrySize: budget / 4, sizeCalculation: (page: Buffer) => page.length }) : null;
  }

  /**
   * One page of a client's visits, in the order visitDateTime, visitId. Every accepted query
   * covers closed days (the dates are before today), so a page only changes when the client's
   * data does: rendered pages and page starts are kept under keys holding the client's data
   * version, which every import moves in the same transaction as its writes.
   */
  async page(query: VisitsQueryDto, variant: VisitsVariant): Promise<VisitsPage> {
    const version = (await this.repo.dataVersion(query.SvcClientId)) ?? 0;
    const types = query.visitTypeCodes.sort().join(',');
    // The rows a query selects, whatever the page and variant.
    const selection = [query.SvcClientId, version, query.FromDate, query.ToDate, query.SvcBrandId ?? '', types].join('|');
    const key = [variant, selection, query.Skip, query.Take].join('|');
    const etag = `W/"${createHash('sha256').update(key).digest('base64url').slice(0, 27)}"`;
    const cached = this.cache?.get(key);
    if (cached) return { body: cached, etag };
    let render = this.rendering.get(key);
    if (!render) {
      render = this.render(query, variant, selection).finally(() => this.rendering.delete(key));
      this.rendering.set(key, render);
    }
    const body = await render;
    this.cache?.set(key, body);
    return { body, etag };
  }

  private async render(query: VisitsQueryDto, variant: VisitsVariant, selection: string): Promise<Buffer> {
    const plus = variant === 'plus';
    const rows = await this.repo.page({
      clientId: query.SvcClientId,
      from: query.FromDate,
      until: addDays(query.ToDate, 1),
      brandId: query.SvcBrandId,
      visitTypes: query.visitTypeCodes,
      skip: query.Skip,
      take: query.Take,
      after: this.seeks.get(`${selection}|${query.Skip}`),
      plus,
    });
    const last = rows.at(-1);
    if (last) this.seeks.set(`${selection}|${query.Skip + rows.length}`, { visitDateTime: last.visit_date_time, id: last.id });
    return visitsPageJson(rows, plus);
  }
}
