import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { EntitledQuery, selectionOf } from '../auth/entitled-query.js';
import { RequiresScope } from '../auth/requires-scope.decorator.js';
import { Scope } from '../auth/scopes.js';
import { ApiDataErrors, ApiExpectationFailed, ApiHeadersTooLarge } from '../common/api-responses.js';
import { BranchesService } from './branches.service.js';
import { BranchDto } from './dto/branch.dto.js';
import { BranchesQueryDto } from './dto/branches-query.dto.js';

@ApiTags('branches')
@ApiHeadersTooLarge()
@ApiExpectationFailed()
@Controller('branches')
export class BranchesController {
  constructor(private readonly branches: BranchesService) {}

  @Get()
  @RequiresScope(Scope.Branches)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    operationId: 'listBranches',
    summary: "The client's branches: the service's branch ids and the client's own branch codes.",
    description: 'A credential restricted to brands gets the branches of those brands only.',
  })
  @ApiOkResponse({ type: BranchDto, isArray: true })
  @ApiDataErrors(["'SvcClientId' must not be empty."])
  list(@EntitledQuery() query: BranchesQueryDto): Promise<BranchDto[]> {
    return this.branches.list(selectionOf(query));
  }
}
