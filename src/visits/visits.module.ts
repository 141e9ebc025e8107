import { Module } from '@nestjs/common';
import { BodyPool } from '../common/body-pool.js';
import { AuthModule } from '../auth/auth.module.js';
import { BranchesModule } from '../branches/branches.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { CompressedPages } from './compressed-pages.js';
import { PageCacheMetrics } from './page-cache-metrics.js';
import { PagesInFlight } from './pages-in-flight.js';
import { VisitChangesService } from './visit-changes.service.js';
import { VisitNames } from './visit-names.service.js';
import { VisitPagesLane } from './visit-pages-lane.js';
import { VisitTypesModule } from './visit-types.module.js';
import { VisitsImportService } from './visits-import.service.js';
import { VisitsController } from './visits.controller.js';
import { VisitsService } from './visits.service.js';
import { VisitsRepository } from './visits.repository.js';

/**
 * Page bodies kept for re-use (see BodyPool), at most: as many as the default PAGES_IN_FLIGHT_MB
 * lets be written at once, so that under load every page is written into a buffer used before
 * (a new 4 MB buffer costs more to fault in than the page costs to read). Never more than the
 * room the bodies being written leave in PAGES_IN_FLIGHT_MB, so that kept and written bodies
 * together stay within it; let go when the process goes quiet.
 */
export const PAGE_BODIES_KEPT_BYTES = 64 * 1024 * 1024;

@Module({
  imports: [AuthModule, ClientsModule, BranchesModule, WebhooksModule, VisitTypesModule],
  controllers: [VisitsController],
  providers: [
    VisitsRepository,
    VisitsImportService,
    VisitsService,
    VisitChangesService,
    VisitNames,
    CompressedPages,
    PagesInFlight,
    PageCacheMetrics,
    VisitPagesLane,
    // The buffers kept share PAGES_IN_FLIGHT_MB with the bodies being written.
    { provide: BodyPool, useFactory: (inFlight: PagesInFlight): BodyPool => new BodyPool(PAGE_BODIES_KEPT_BYTES, () => inFlight.room), inject: [PagesInFlight] },
  ],
  exports: [VisitsImportService, VisitPagesLane],
})
export class VisitsModule {}
