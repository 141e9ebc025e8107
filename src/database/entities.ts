import { ApiKey } from '../auth/entities/api-key.entity.js';
import { Credential } from '../auth/entities/credential.entity.js';
import { SettingCheck } from './setting-check.entity.js';
import { SigningKey } from '../auth/entities/signing-key.entity.js';
import { Branch } from '../branches/entities/branch.entity.js';
import { Brand } from '../clients/entities/brand.entity.js';
import { Client } from '../clients/entities/client.entity.js';
import { DishImage } from '../menus/entities/dish-image.entity.js';
import { Dish } from '../menus/entities/dish.entity.js';
import { Menu } from '../menus/entities/menu.entity.js';
import { SequenceBlock } from '../visits/entities/sequence-block.entity.js';
import { VisitDeparture } from '../visits/entities/visit-departure.entity.js';
import { VisitDocument } from '../visits/entities/visit-document.entity.js';
import { VisitType } from '../visits/entities/visit-type.entity.js';
import { Visit } from '../visits/entities/visit.entity.js';
import { WebhookDelivery } from '../webhooks/entities/webhook-delivery.entity.js';
import { WebhookEndpoint } from '../webhooks/entities/webhook-endpoint.entity.js';

/** Every entity of the service, listed explicitly (no globs: the build is ESM). */
export const ENTITIES = [
  Client,
  Brand,
  Branch,
  VisitType,
  Visit,
  VisitDocument,
  VisitDeparture,
  SequenceBlock,
  Menu,
  Dish,
  DishImage,
  Credential,
  ApiKey,
  SigningKey,
  SettingCheck,
  WebhookEndpoint,
  WebhookDelivery,
];
