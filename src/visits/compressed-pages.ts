import { Injectable } from '@nestjs/common';
import { CompressedBodies } from '../common/compression.js';
import { AppConfig } from '../config/app-config.js';

/**
 * The br and gzip forms of rendered visit pages, so that a page asked for again costs no
 * compression. Kept apart from the page cache (VisitsService), under the page's ETag: it is
 * derived from the page cache's key (variant, client data version, selection, window), so it
 * names one page exactly, and an import that changes the data changes it too. The budget is a
 * quarter of VISITS_CACHE_MB on top of it: a page compresses 15 to 30 times (docs/decisions.md,
 * "Compression"), so both forms of every page the page cache holds fit several times over.
 */
@Injectable()
export class CompressedPages extends CompressedBodies {
  constructor(config: AppConfig) {
    super((config.VISITS_CACHE_MB * 1024 * 1024) / 4);
  }
}
