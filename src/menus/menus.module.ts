import { Module } from '@nestjs/common';
import { ClientsModule } from '../clients/clients.module.js';
import { AppConfig } from '../config/app-config.js';
import { DishUploadInterceptor } from './dish-upload.interceptor.js';
import { imageStorageFor } from './image-storage.js';
import { ImageSweeper } from './image-sweep.js';
import { MenusImportService } from './menus-import.service.js';
import { MenusController } from './menus.controller.js';
import { IMAGE_STORAGE, MenusRepository } from './menus.repository.js';
import { MenusService } from './menus.service.js';
import { UploadsInFlight } from './uploads-in-flight.js';

@Module({
  imports: [ClientsModule],
  controllers: [MenusController],
  providers: [
    { provide: IMAGE_STORAGE, inject: [AppConfig], useFactory: imageStorageFor },
    MenusRepository,
    MenusService,
    MenusImportService,
    DishUploadInterceptor,
    UploadsInFlight,
    ImageSweeper,
  ],
  exports: [MenusImportService, MenusRepository, ImageSweeper],
})
export class MenusModule {}
