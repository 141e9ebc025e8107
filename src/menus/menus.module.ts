import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { MenusImportService } from './menus-import.service.js';
import { MenusRepository } from './menus.repository.js';

@Module({
  imports: [ClientsModule],
  providers: [MenusRepository, MenusImportService],
  exports: [MenusImportService, MenusRepository],
})
export class MenusModule {}
