// Size and time of gzip and brotli at several levels on saved response bodies: the measurement
// behind the levels in src/common/compression.ts (recorded in docs/decisions.md, "Compression").
//
// Run: npx tsc -p tsconfig.bench.json && node dist-bench/bench/compression.js <file>...
// A page to measure: start the demo (`npm start`), take a token as in the README, then
//   curl -s "http://localhost:3000/visits/standard?SvcClientId=1001&FromDate=…&ToDate=…&Skip=0&Take=1000" \
//     -H "svc-api-key: $API_KEY" -H "Authorization: Bearer $TOKEN" -o page.json
//
// Times are the median of 15 runs of the synchronous call, i.e. the CPU time one compression
// takes on one core (the service runs the same work asynchronously, in the libuv threadpool).

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import zlib from 'node:zlib';

const RUNS = 15;
type Codec = [name: string, compress: (body: Buffer) => Buffer];

const CODECS: Codec[] = [
  ...[1, 4, 6, 9].map((level): Codec => [`gzip ${level}`, (body) => zlib.gzipSync(body, { level })]),
  ...[1, 3, 4, 5, 6].map((quality): Codec => [
    `br ${quality}`,
    (body) =>
      zlib.brotliCompressSync(body, {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length },
      }),
  ]),
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function measure(body: Buffer, compress: (body: Buffer) => Buffer): { bytes: number; ms: number } {
  const times: number[] = [];
  let out = body;
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    out = compress(body);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { bytes: out.length, ms: median(times) };
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: node dist-bench/bench/compression.js <file>...\n');
  process.exit(2);
}
for (const file of files) {
  const body = readFileSync(file);
  console.log(`\n${basename(file)}: ${body.length} bytes`);
  console.log('| coding | bytes | ratio | ms |\n|---|---|---|---|');
  for (const [name, compress] of CODECS) {
    const { bytes, ms } = measure(body, compress);
    console.log(`| ${name} | ${bytes} | ${(body.length / bytes).toFixed(1)} | ${ms.toFixed(1)} |`);
  }
}
