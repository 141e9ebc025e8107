// The e2e tests of this project run on the embedded SQLite database.
delete process.env.DATABASE_URL;
process.env.TEST_DATABASE = 'sqlite';
