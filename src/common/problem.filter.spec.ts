import { jest } from '@jest/globals';
import { Controller, Get, Logger, Module, type INestApplication } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { ProblemException } from './problem.js';
import { ProblemFilter } from './problem.filter.js';

/** Errors as the drivers and the file system raise them. */
const raised = (fields: Record<string, unknown>): Error => Object.assign(new Error('raised'), fields);

@Controller()
class FailingController {
  @Get('images-disk-full')
  imagesDiskFull(): never {
    throw raised({ code: 'ENOSPC', message: "ENOSPC: no space left on device, write '/data/images/.x.tmp'" });
  }

  @Get('database-disk-full')
  databaseDiskFull(): never {
    throw raised({ name: 'QueryFailedError', driverError: raised({ code: 'SQLITE_FULL', message: 'database or disk is full' }) });
  }

  @Get('images-read-only')
  imagesReadOnly(): never {
    throw raised({ code: 'EROFS', path: '/data/images/.x.tmp', message: "EROFS: read-only file system, open '/data/images/.x.tmp'" });
  }

  @Get('images-refused')
  imagesRefused(): never {
    throw raised({ code: 'EACCES', path: '/data/images/x', message: "EACCES: permission denied, open '/data/images/x'" });
  }

  @Get('database-failing')
  databaseFailing(): never {
    throw raised({ name: 'SqliteError', code: 'SQLITE_IOERR_WRITE', message: 'disk I/O error' });
  }

  @Get('brand-of-a-key')
  brandOfAKey(): never {
    throw new ProblemException(400, 'The request could not be processed.', {
      errors: ["'SvcBrandId' must be an integer: 'svck_OjuryvbCZjsblGYSCqpif2ZDSX'.", "'VisitTypes' must be 2 alpha characters: 'whsec_Zz9'."],
    });
  }

  @Get('no-descriptors')
  noDescriptors(): never {
    throw raised({ code: 'EMFILE', syscall: 'open', path: '/data/images/x', message: "EMFILE: too many open files, open '/data/images/x'" });
  }

  @Get('database-away')
  databaseAway(): never {
    throw raised({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' });
  }
}

@Module({ controllers: [FailingController], providers: [{ provide: APP_FILTER, useClass: ProblemFilter }] })
class FailingModule {}

describe('ProblemFilter: what a 503 and a 4xx say, and what a 4xx logs', () => {
  let app: INestApplication;
  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [FailingModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app.close();
  });

  it.each(['/images-disk-full', '/database-disk-full'])('a full disk (%s): no room left, retry in a minute, nothing internal', async (path) => {
    const res = await request(app.getHttpServer()).get(path);
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.headers['retry-after']).toBe('60');
    expect(JSON.parse(res.text)).toEqual({
      title: 'Service Unavailable',
      status: 503,
      detail: 'The service has no room left to store data; nothing was written. Retry after the time in Retry-After.',
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
    });
  });

  it.each(['/images-read-only', '/images-refused', '/database-failing'])('storage that cannot be used (%s): said so, retry in a minute, nothing internal', async (path) => {
    const res = await request(app.getHttpServer()).get(path);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('60');
    expect(JSON.parse(res.text)).toEqual({
      title: 'Service Unavailable',
      status: 503,
      detail: "The service's storage cannot be used now; nothing was changed. Retry after the time in Retry-After.",
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
    });
  });

  it('no file descriptor left (a flood of connections): cannot open more files now, retry in seconds, nothing internal', async () => {
    const res = await request(app.getHttpServer()).get('/no-descriptors');
    expect([res.status, res.headers['retry-after']]).toEqual([503, '5']);
    expect(JSON.parse(res.text)).toEqual({
      title: 'Service Unavailable',
      status: 503,
      detail: 'The service cannot open more files now; nothing was changed. Retry after the time in Retry-After.',
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
    });
  });

  it('a database out of reach: the database is unavailable, retry in seconds', async () => {
    const res = await request(app.getHttpServer()).get('/database-away');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(JSON.parse(res.text)).toMatchObject({ status: 503, detail: 'The database is unavailable; retry after the time in Retry-After.' });
  });

  it('answers and logs the errors with values that are credentials by their form redacted', async () => {
    const debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    try {
      const res = await request(app.getHttpServer()).get('/brand-of-a-key');
      expect(res.status).toBe(400);
      // The client sent them, but an answer is kept where credentials must not be (its logs, an error tracker).
      expect(JSON.parse(res.text).errors).toEqual(["'SvcBrandId' must be an integer: '[redacted]'.", "'VisitTypes' must be 2 alpha characters: '[redacted]'."]);
      expect(res.text).not.toMatch(/svck_|whsec_/);
      expect(debug).toHaveBeenCalledTimes(1);
      const logged = JSON.stringify(debug.mock.calls[0]);
      expect(logged).not.toMatch(/svck_|whsec_/);
      expect(debug.mock.calls[0][0]).toMatchObject({
        status: 400,
        errors: ["'SvcBrandId' must be an integer: '[redacted]'.", "'VisitTypes' must be 2 alpha characters: '[redacted]'."],
      });
    } finally {
      debug.mockRestore();
    }
  });

  it('names a path no route has, with a segment that is a credential by its form redacted', async () => {
    const plain = await request(app.getHttpServer()).get('/no/such/route?client_secret=s3cr3t');
    expect(JSON.parse(plain.text)).toMatchObject({ status: 404, detail: 'No endpoint has the path /no/such/route.' });
    const key = await request(app.getHttpServer()).get('/branches/svck_OjuryvbCZjsblGYSCqpif2ZDSX/x');
    expect(key.status).toBe(404);
    expect(JSON.parse(key.text)).toMatchObject({ status: 404, detail: 'No endpoint has the path /branches/[redacted]/x.' });
    expect(key.text).not.toContain('svck_');
  });
});
