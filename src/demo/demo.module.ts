import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { BranchesModule } from '../branches/branches.module.js';
import { ClientsModule } from '../clients/clients.module.js';
import { MenusModule } from '../menus/menus.module.js';
import { VisitsModule } from '../visits/visits.module.js';
import { DemoService } from './demo.service.js';

@Module({
  imports: [ClientsModule, BranchesModule, VisitsModule, MenusModule, AuthModule],
  providers: [DemoService],
  exports: [DemoService],
})
export class DemoModule {}
