import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { addDays } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import type { VisitsQueryDto } from './dto/visits-query.dto.js';
import { PageCache } from './page-cache.js';
import { visitsPageJson } from './visit-json.js';
import { VisitsRepository } from './visits.repository.js';

export type VisitsVariant = 'standard' | 'plus';

/** A rendered page and the validator it is served with. */
export interface VisitsPage {
  body: Buffer;
  etag: string;
}

@Injectable()
export class VisitsService {
  private readonly cache: PageCache | null;
  /** Renders under way: concurrent requests for one page wait for a single render. */
  private readonly rendering = new Map<string, Promise<Buffer>>();

  constructor(
    private readonly repo: VisitsRepository,
    config: AppConfig,
  ) {
    this.cache = config.VISITS_CACHE_MB > 0 ? new PageCache(config.VISITS_CACHE_MB * 1024 * 1024) : null;
  }

  /**
   * One page of a client's visits, in the order visitDateTime, visitId. Every accepted query
   * covers closed days (the dates are before today), so a page only changes when the client's
   * data does: rendered pages are kept under a key holding the client's data version, which
   * every import moves in the same transaction as its writes.
   */
  async page(query: VisitsQueryDto, variant: VisitsVariant): Promise<VisitsPage> {
    const version = (await this.repo.dataVersion(query.SvcClientId)) ?? 0;
    const types = query.visitTypeCodes.sort().join(',');
    const key = [variant, query.SvcClientId, version, query.FromDate, query.ToDate, query.SvcBrandId ?? '', types, query.Skip, query.Take].join('|');
    const etag = `W/"${createHash('sha256').update(key).digest('base64url').slice(0, 27)}"`;
    const cached = this.cache?.get(key);
    if (cached) return { body: cached, etag };
    let render = this.rendering.get(key);
    if (!render) {
      render = this.render(query, variant).finally(() => this.rendering.delete(key));
      this.rendering.set(key, render);
    }
    const body = await render;
    this.cache?.set(key, body);
    return { body, etag };
  }

  private async render(query: VisitsQueryDto, variant: VisitsVariant): Promise<Buffer> {
    const plus = variant === 'plus';
    const rows = await this.repo.page({
      clientId: query.SvcClientId,
      from: query.FromDate,
      until: addDays(query.ToDate, 1),
      brandId: query.SvcBrandId,
      visitTypes: query.visitTypeCodes,
      skip: query.Skip,
      take: query.Take,
      plus,
    });
    return visitsPageJson(rows, plus);
  }
}
