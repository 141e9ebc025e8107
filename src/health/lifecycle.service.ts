import { Injectable } from '@nestjs/common';

/** Whether the process is draining after SIGTERM: readiness then fails so no new traffic comes. */
@Injectable()
export class LifecycleService {
  shuttingDown = false;
}
