import { Module } from '@nestjs/common';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhooksRepository } from './webhooks.repository.js';
import { WebhooksService } from './webhooks.service.js';

/**
 * Webhooks: endpoints (operator CLI), the outbox the visits import writes to in its own
 * transaction (WebhooksRepository.recordVisitChanges), and the dispatcher that delivers it.
 * It depends on no other feature module, so the visits module can import it.
 */
@Module({
  providers: [WebhooksRepository, WebhooksService, WebhookDispatcher, WebhookMetrics],
  exports: [WebhooksRepository, WebhooksService],
})
export class WebhooksModule {}
