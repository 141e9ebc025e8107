// The framework floor the service is compared with: the smallest NestJS app on Express (as
// the service uses) that answers one GET route with the same bytes and content type, read
// once into memory. No guards, pipes, interceptors, validation, database or JSON: what is
// left is the cost of Nest's router and Express, which the service cannot go below.
//
// Usage: node dist-bench/bench/framework-floor.js <port> <body file> <content type> <route path>
// Listens on 127.0.0.1:<port>.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Controller, Get, Module, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import type { Response } from 'express';

const [port, bodyFile, contentType, routePath] = process.argv.slice(2);
if (!port || !bodyFile || !contentType || !routePath) {
  process.stderr.write('usage: node framework-floor.js <port> <body file> <content type> <route path>\n');
  process.exit(64);
}

const body = readFileSync(bodyFile);
const length = String(body.length);

@Controller(routePath.replace(/^\//, ''))
class FloorController {
  /** Writes the bytes straight to the Express response, as a service route with @Res() would. */
  @Get()
  page(@Res() res: Response): void {
    res.setHeader('Content-Type', contentType);
    res.setHeader('Content-Length', length);
    res.end(body);
  }
}

@Module({ controllers: [FloorController] })
class FloorModule {}

const app = await NestFactory.create<NestExpressApplication>(FloorModule, new ExpressAdapter(), { logger: false });
app.set('etag', false);
app.disable('x-powered-by');
await app.listen(Number(port), '127.0.0.1');

// Stop on SIGTERM as the bare server does (Node's default), without Nest's shutdown hooks.
process.on('SIGTERM', () => process.exit(0));
