import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'results:isPublic';

/** Opts a route out of the global API key, token and scope guards. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);
