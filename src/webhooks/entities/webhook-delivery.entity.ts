import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';

/**
 * The outbox: one event for one endpoint, written in the transaction of the change it
 * announces and deleted once a receiver has taken it (or it was given up). While no
 * attempt has been made (attempts = 0) further changes of the client add to its count
 * and give it a new id (one a restore brought back after its delivery must not look delivered);
 * the first claim freezes it, so every attempt sends the same body.
 */
@Entity('webhook_deliveries')
// The claim: events due, oldest first.
@Index('ix_webhook_deliveries_due', ['dueAt'])
// A writer's look-up of the event still open for an endpoint and client.
@Index('ix_webhook_deliveries_endpoint_client', ['endpointId', 'clientId', 'attempts'])
export class WebhookDelivery {
  /** The event id (`evt_…`), also sent as svc-event-id. */
  @PrimaryColumn({ name: 'event_id', type: 'varchar', length: 40 })
  eventId!: string;

  @Column({ name: 'endpoint_id', type: 'varchar', length: 40 })
  endpointId!: string;

  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'fk_webhook_deliveries_endpoint' })
  endpoint?: WebhookEndpoint;

  @Column({ type: 'varchar', length: 40 })
  type!: string;

  /** The `SvcClientId` whose visits changed. */
  @Column({ name: 'client_id', type: 'integer' })
  clientId!: number;

  /** Visits inserted or changed that the endpoint's credential may read. */
  @Column({ type: 'integer' })
  count!: number;

  /** The first change: the event's `created`, and where its retry window starts. */
  @Column({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;

  /** When the next attempt may start. */
  @Column({ name: 'due_at', ...timestampColumn })
  dueAt!: Date;

  /** Attempts started, counted when claimed (so one whose process died counts too). */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  /** The claim's lease: until then no other process takes the event. */
  @Column({ name: 'locked_until', ...timestampColumn, nullable: true })
  lockedUntil!: Date | null;

  /** Names the claim, so that only its holder completes or releases the event. */
  @Column({ name: 'lock_token', type: 'varchar', length: 40, nullable: true })
  lockToken!: string | null;

  @Column({ name: 'last_error', type: 'varchar', length: 500, nullable: true })
  lastError!: string | null;
}
