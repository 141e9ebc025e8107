import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhookOutbox } from './webhook-outbox.js';
import { WebhooksRepository } from './webhooks.repository.js';
import { WebhooksService } from './webhooks.service.js';

/**
 * Webhooks: endpoints (operator CLI), the outbox the visits import writes to in its own
 * transaction (WebhookOutbox), and the dispatcher that delivers it. Of the other features
 * it uses only auth (an endpoint names a credential), so the visits module can import it.
 */
@Module({
  imports: [AuthModule],
  providers: [WebhooksRepository, WebhooksService, WebhookOutbox, WebhookDispatcher, WebhookMetrics],
  exports: [WebhooksService, WebhookOutbox],
})
export class WebhooksModule {}
