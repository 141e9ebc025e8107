import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { VisitsModule } from '../visits/visits.module.js';
import { CredentialsRepository } from './credentials.repository.js';
import { CredentialsService } from './credentials.service.js';

@Module({
  imports: [ClientsModule, VisitsModule],
  providers: [CredentialsRepository, CredentialsService],
  exports: [CredentialsService, CredentialsRepository],
})
export class AuthModule {}
