import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { VisitsModule } from '../visits/visits.module.js';
import { AuthRepository } from './auth.repository.js';
import { CredentialsService } from './credentials.service.js';

@Module({
  imports: [ClientsModule, VisitsModule],
  providers: [AuthRepository, CredentialsService],
  exports: [CredentialsService, AuthRepository],
})
export class AuthModule {}
