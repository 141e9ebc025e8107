import { Module } from '@nestjs/common';
import { ClientsRepository } from './clients.repository.js';
import { ClientsService } from './clients.service.js';
import { ClientDataVersions } from './data-versions.js';

@Module({
  providers: [ClientsRepository, ClientsService, ClientDataVersions],
  exports: [ClientsService, ClientDataVersions],
})
export class ClientsModule {}
