// The framework floor the service is compared with: the smallest NestJS app on Express (as
// the service uses) that answers one GET route with the same bytes and content type, read
// once into memory. No guards, pipes, interceptors, validation, database or JSON: what is
// left is the cost of Nest's router and Express, which the service cannot go below.
//
// Usage: node bench/framework-floor.mjs <body file> <content type> <route path>
// Prints one JSON line {"port": n} once it listens on 127.0.0.1 (on a free port).
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Controller, Get, Module, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';

const [bodyFile, contentType, routePath] = process.argv.slice(2);
if (!bodyFile || !contentType || !routePath) {
  process.stderr.write('usage: node bench/framework-floor.mjs <body file> <content type> <route path>\n');
  process.exit(64);
}

const body = readFileSync(bodyFile);
const length = String(body.length);

class FloorController {
  /** Writes the bytes straight to the Express response, as a service route with @Res() would. */
  page(res) {
    res.setHeader('Content-Type', contentType);
    res.setHeader('Content-Length', length);
    res.end(body);
  }
}

// Plain JavaScript has no decorator syntax: apply them by hand, as TypeScript would.
const prototype = FloorController.prototype;
Reflect.decorate([Get()], prototype, 'page', Object.getOwnPropertyDescriptor(prototype, 'page'));
Res()(prototype, 'page', 0);
Controller(routePath.replace(/^\//, ''))(FloorController);

class FloorModule {}
Module({ controllers: [FloorController] })(FloorModule);

const app = await NestFactory.create(FloorModule, new ExpressAdapter(), { logger: false });
app.getHttpAdapter().getInstance().set('etag', false);
app.getHttpAdapter().getInstance().disable('x-powered-by');
await app.listen(0, '127.0.0.1');
const address = app.getHttpServer().address();
const port = typeof address === 'object' && address !== null ? address.port : 0;
process.stdout.write(`${JSON.stringify({ port })}\n`);

// Stop on SIGTERM as the bare server does (Node's default), without Nest's shutdown hooks.
process.on('SIGTERM', () => process.exit(0));
