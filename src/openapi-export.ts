import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { stringify } from 'yaml';
import { AppModule } from './app.module.js';
import { loadConfig } from './config/app-config.js';
import { buildOpenApi } from './swagger.js';

/** Objects with their keys sorted, recursively; arrays keep their order. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/**
 * Writes the published contract, `openapi/openapi.json` and `openapi/openapi.yaml`, from
 * the controllers and DTOs, without a database or a listener (Nest's preview mode). The
 * output depends on the code only: default settings, sorted keys, no timestamps. The YAML
 * quotes every text a YAML 1.1 reader would take for another type (`Yes`, `2026-12-31`), so
 * that such readers (SnakeYAML, PyYAML) find the same document as the JSON.
 */
async function main(): Promise<void> {
  const outDir = resolve(process.argv[2] ?? 'openapi');
  const config = loadConfig({});
  const app = await NestFactory.create(AppModule.forRoot(config), { preview: true, logger: false, abortOnError: false });
  const document = sortKeys(buildOpenApi(app, config));
  await app.close();
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'openapi.json'), `${JSON.stringify(document, null, 2)}\n`);
  writeFileSync(join(outDir, 'openapi.yaml'), stringify(document, { lineWidth: 0, aliasDuplicateObjects: false, version: '1.1' }));
  process.stdout.write(`wrote ${join(outDir, 'openapi.json')} and openapi.yaml\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`openapi export failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
