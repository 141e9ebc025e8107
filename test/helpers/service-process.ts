import { runningServices } from './service-process-core.js';

export { startService, type ServiceProcess, type StartOptions } from './service-process-core.js';

// Every process a test file starts ends with the file, even when a test fails before its own stop().
afterAll(async () => {
  await Promise.all([...runningServices].map((stop) => stop('SIGKILL')));
});
