'use strict';
/**
 * Jest's runtime, with V8's code cache kept from one test file to the next in a worker.
 *
 * Jest loads every module afresh for each test file, in the file's own context, and compiles
 * it afresh too: Node gives each of its scripts and modules options of their own (the
 * dynamic-import callback), so V8's in-process compilation cache never matches. Most test
 * files load the service's modules (typeorm, class-validator, NestJS, rxjs: some 1,700 files),
 * which cost a worker more to compile than most tests take. Here the first file a worker
 * runs compiles them; the code V8 made for each is kept by file name and given back to V8
 * when a later file compiles the same source (checked whole, not by name alone); V8 itself
 * refuses data of another V8 or other flags, and then compiles as usual. Behaviour is the
 * same: only the compiler's work is saved (about 9% of the workers' CPU, measured on the
 * HTTP tests).
 */
const vm = require('node:vm');
const Runtime = require('jest-runtime').default;

/** File name → the source compiled and V8's code for it. */
const compiled = new Map();
/** Scripts compiled by the current test file without a cache: their code is kept at its end. */
let fresh = [];

function keep(name, source, code) {
  try {
    compiled.set(name, { source, data: code.createCachedData() });
  } catch {
    // Not cacheable (V8 may decline): compiled again next time.
  }
}

/**
 * Node 20 loses the dynamic-import callback of a script or module compiled from a code cache
 * (its `import()` then throws ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), and so would the code
 * it evaluates: a source with anything like `import(` in it, even in a string, is compiled
 * afresh every time.
 */
const DYNAMIC_IMPORT = /\bimport\s*\(/;

/** `Base` (a vm class taking source and options) given the code kept for the same file and source. */
function withCodeCache(Base, nameOf, keepWhenMade) {
  return class extends Base {
    constructor(source, options) {
      // vm.Script also takes its file name alone for its options.
      const given = typeof options === 'string' ? { filename: options } : options;
      const name = typeof source === 'string' && !DYNAMIC_IMPORT.test(source) ? nameOf(given) : undefined;
      const known = name === undefined ? undefined : compiled.get(name);
      const cachedData = known !== undefined && known.source === source ? known.data : undefined;
      super(source, cachedData === undefined ? options : { ...given, cachedData });
      // Refused data (V8 compiled afresh) is replaced by this code's.
      if (name === undefined || (cachedData !== undefined && this.cachedDataRejected !== true)) return;
      if (keepWhenMade) keep(name, source, this);
      else fresh.push({ name, source, code: this });
    }
  };
}

// A script's code is kept once its file has run: it then holds the functions compiled lazily
// as they were first called. A module's can only be made before it is evaluated.
vm.Script = withCodeCache(vm.Script, (options) => options?.filename, false);
if (vm.SourceTextModule) vm.SourceTextModule = withCodeCache(vm.SourceTextModule, (options) => options?.identifier, true);

class CodeCachingRuntime extends Runtime {
  teardown() {
    for (const { name, source, code } of fresh) keep(name, source, code);
    fresh = [];
    super.teardown();
  }
}

module.exports = CodeCachingRuntime;
