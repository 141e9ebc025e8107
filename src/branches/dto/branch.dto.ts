import { ApiProperty } from '@nestjs/swagger';

/** A branch: the service's id and the client's own code for it. */
export class BranchDto {
  @ApiProperty({ description: "The service's branch identifier (the visits' branchId).", example: 'BR-1001-0001' })
  id!: string;

  @ApiProperty({ example: 'Acme Grill Leeds Briggate' })
  name!: string;

  @ApiProperty({ type: String, nullable: true, description: "The client's own branch code.", example: 'AG-LDS-01' })
  branchCode!: string | null;
}
