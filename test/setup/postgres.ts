// The e2e tests of this project run on PostgreSQL; each test file gets its own schema.
process.env.DATABASE_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
process.env.TEST_DATABASE = 'postgres';
