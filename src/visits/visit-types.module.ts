import { Global, Injectable, Module } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { VisitTypeCatalogue } from '../auth/visit-type-catalogue.js';
import { VisitType } from './entities/visit-type.entity.js';

/** The visit types seeded by migration: what imports and credentials accept. */
@Injectable()
export class VisitTypeCodes extends VisitTypeCatalogue {
  constructor(@InjectDataSource() private readonly db: DataSource) {
    super();
  }

  async codes(): Promise<ReadonlySet<string>> {
    const rows = await this.db.getRepository(VisitType).find({ select: { code: true } });
    return new Set(rows.map((r) => r.code));
  }
}

/**
 * Global, so that auth's credentials service finds the catalogue without importing the
 * visits module (see VisitTypeCatalogue).
 */
@Global()
@Module({
  providers: [{ provide: VisitTypeCatalogue, useClass: VisitTypeCodes }],
  exports: [VisitTypeCatalogue],
})
export class VisitTypesModule {}
