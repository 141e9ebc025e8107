import { ApiProperty } from '@nestjs/swagger';

/** The event types a receiver is sent. */
export const VISITS_CHANGED = 'visits.changed';
export const PING = 'ping';

export class VisitsChangedDataDto {
  @ApiProperty({ type: 'integer', minimum: 1, example: 1001, description: 'The client whose visits changed: read its change feed.' })
  svcClientId!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    example: 3,
    description: 'Visit inserts and changes the credential may read, and changes that moved a visit out of what it may read (the change feed reports those in removed), over the changes this event stands for (a visit changed twice counts twice).',
  })
  count!: number;
}

export class VisitsChangedEventDto {
  @ApiProperty({ example: 'evt_0f8c3a9b5d2e4f6a8b1c3d5e7f9a0b2c', description: 'Unique per event; the same on every retry (also in `svc-event-id`).' })
  id!: string;

  @ApiProperty({ enum: [VISITS_CHANGED], example: VISITS_CHANGED })
  type!: typeof VISITS_CHANGED;

  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.000Z', description: 'When the first change the event stands for was written (UTC).' })
  created!: string;

  @ApiProperty({ type: VisitsChangedDataDto })
  data!: VisitsChangedDataDto;
}

export class PingDataDto {}

export class PingEventDto {
  @ApiProperty({ example: 'evt_5a1b2c3d4e5f60718293a4b5c6d7e8f9', description: 'Unique per ping (also in `svc-event-id`).' })
  id!: string;

  @ApiProperty({ enum: [PING], example: PING })
  type!: typeof PING;

  @ApiProperty({ format: 'date-time', example: '2026-11-22T10:15:30.000Z' })
  created!: string;

  @ApiProperty({ type: PingDataDto, description: 'Empty.' })
  data!: PingDataDto;
}
