import { randomBytes } from 'node:crypto';
import { PING, VISITS_CHANGED, type PingEventDto, type VisitsChangedEventDto } from './dto/webhook-event.dto.js';

export const newEventId = (): string => `evt_${randomBytes(16).toString('hex')}`;

/** The body of a visits.changed event: thin, never visit data; the receiver reads the change feed. */
export function visitsChangedEvent(id: string, created: Date, svcClientId: number, count: number): VisitsChangedEventDto {
  return { id, type: VISITS_CHANGED, created: created.toISOString(), data: { svcClientId, count } };
}

/** The event `webhooks test` sends. */
export function pingEvent(): PingEventDto {
  return { id: newEventId(), type: PING, created: new Date().toISOString(), data: {} };
}
