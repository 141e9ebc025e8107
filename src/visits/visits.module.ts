import { Module } from '@nestjs/common';
import { BranchesModule } from '../branches/branches.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { VisitsImportService } from './visits-import.service.js';
import { VisitsRepository } from './visits.repository.js';

@Module({
  imports: [ClientsModule, BranchesModule],
  providers: [VisitsRepository, VisitsImportService],
  exports: [VisitsImportService, VisitsRepository],
})
export class VisitsModule {}
