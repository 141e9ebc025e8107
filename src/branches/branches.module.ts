import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { BranchesController } from './branches.controller.js';
import { BranchesRepository } from './branches.repository.js';
import { BranchesService } from './branches.service.js';

@Module({
  imports: [ClientsModule],
  controllers: [BranchesController],
  providers: [BranchesRepository, BranchesService],
  exports: [BranchesService],
})
export class BranchesModule {}
