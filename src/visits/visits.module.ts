import { Module } from '@nestjs/common';
import { BranchesModule } from '../branches/branches.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { CompressedPages } from './compressed-pages.js';
import { PagesInFlight } from './pages-in-flight.js';
import { VisitChangesService } from './visit-changes.service.js';
import { VisitNames } from './visit-names.service.js';
import { VisitTypesModule } from './visit-types.module.js';
import { VisitsImportService } from './visits-import.service.js';
import { VisitsController } from './visits.controller.js';
import { VisitsService } from './visits.service.js';
import { VisitsRepository } from './visits.repository.js';

@Module({
  imports: [ClientsModule, BranchesModule, WebhooksModule, VisitTypesModule],
  controllers: [VisitsController],
  providers: [VisitsRepository, VisitsImportService, VisitsService, VisitChangesService, VisitNames, CompressedPages, PagesInFlight],
  exports: [VisitsImportService],
})
export class VisitsModule {}
