'use strict';
/**
 * Jest's own resolver, remembering what it found for the life of a worker. Jest keeps
 * resolutions per test file only, so every file looked the same imports up again on disk
 * (stat, realpath and package.json reads for each of some 1,700 modules). The files under
 * node_modules and the project's sources do not move while the tests run; a lookup that
 * failed is not remembered. About 5% of a worker's CPU on the HTTP tests.
 */
const found = new Map();

module.exports = (request, options) => {
  const key = `${options.basedir}\0${request}\0${options.conditions?.join(',') ?? ''}`;
  let path = found.get(key);
  if (path === undefined) {
    path = options.defaultResolver(request, options);
    found.set(key, path);
  }
  return path;
};
