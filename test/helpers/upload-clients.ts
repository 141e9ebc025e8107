import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * HTTP clients partners use, each in its own process (as they run, and so that the server
 * and the client do not share one event loop), posting the dish upload form: Node's fetch
 * (undici), curl and Python requests. Each reports what its caller would see.
 */

export interface UploadSpec {
  url: string;
  headers: Record<string, string>;
  /** The `json` part. */
  json: string;
  /** The file sent as the image part (with an empty part name). */
  imageFile: string;
  /** Send the body with `Transfer-Encoding: chunked` instead of a `Content-Length`. */
  chunked?: boolean;
  /** How many times to post it, each on a new connection. */
  times?: number;
}

/** What the client saw: the response, or the error it failed with. */
export interface ClientResult {
  status?: number;
  /** Header names in lower case. */
  headers?: Record<string, string>;
  body?: string;
  error?: string;
}

const TIMEOUT_MS = 180_000;

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, NODE_OPTIONS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function runJsonClient(command: string, args: string[], spec: UploadSpec): Promise<ClientResult[]> {
  const { code, stdout, stderr } = await run(command, args, { UPLOAD_SPEC: JSON.stringify({ times: 1, ...spec }) });
  if (code !== 0) throw new Error(`${command} exited ${code}: ${stderr}${stdout}`);
  return JSON.parse(stdout) as ClientResult[];
}

const FETCH_CLIENT = `
import { readFileSync } from 'node:fs';
const spec = JSON.parse(process.env.UPLOAD_SPEC);
const results = [];
for (let i = 0; i < spec.times; i++) {
  const form = new FormData();
  form.append('json', spec.json);
  // The image in memory, as an application holds it: fetch then writes the body as fast as the socket takes it.
  form.append('', new Blob([readFileSync(spec.imageFile)], { type: 'image/png' }), 'dish.png');
  let init = { method: 'POST', headers: spec.headers, body: form };
  if (spec.chunked) {
    // A stream body has no length: fetch sends it chunked.
    const framed = new Request(spec.url, init);
    init = { method: 'POST', headers: { ...spec.headers, 'content-type': framed.headers.get('content-type') }, body: framed.body, duplex: 'half' };
  }
  try {
    const res = await fetch(spec.url, init);
    results.push({ status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() });
  } catch (error) {
    results.push({ error: String(error) + ' (' + String(error.cause?.code ?? error.cause?.message ?? error.cause) + ')' });
  }
}
process.stdout.write(JSON.stringify(results));
`;

/** Node's built-in fetch (undici) with a FormData body, in a separate Node process. */
export function fetchUpload(spec: UploadSpec): Promise<ClientResult[]> {
  return runJsonClient(process.execPath, ['--input-type=module', '-e', FETCH_CLIENT], spec);
}

const PYTHON_CLIENT = `
import json, os, requests
spec = json.loads(os.environ['UPLOAD_SPEC'])
out = []
for _ in range(spec['times']):
    try:
        with open(spec['imageFile'], 'rb') as image:
            r = requests.post(spec['url'], headers=spec['headers'], data={'json': spec['json']},
                              files={'': ('dish.png', image, 'image/png')}, timeout=120)
        out.append({'status': r.status_code, 'headers': {k.lower(): v for k, v in r.headers.items()}, 'body': r.text})
    except Exception as e:
        out.append({'error': repr(e)})
print(json.dumps(out))
`;

/** Python requests (a multipart body with a Content-Length), in a python3 process. */
export function pythonUpload(spec: UploadSpec): Promise<ClientResult[]> {
  return runJsonClient('python3', ['-c', PYTHON_CLIENT], spec);
}

/** Whether python3 with requests is installed here. */
export async function pythonRequestsAvailable(): Promise<boolean> {
  try {
    return (await run('python3', ['-c', 'import requests'], {})).code === 0;
  } catch {
    return false;
  }
}

/** curl -F, once per call (curl sends `Expect: 100-continue` for bodies this large). */
export async function curlUpload(spec: UploadSpec): Promise<ClientResult> {
  const dir = mkdtempSync(join(tmpdir(), 'curl-'));
  try {
    const [headerFile, bodyFile] = [join(dir, 'headers'), join(dir, 'body')];
    const args = ['-sS', '--max-time', '120', '-D', headerFile, '-o', bodyFile, '-w', '%{http_code}'];
    for (const [name, value] of Object.entries(spec.headers)) args.push('-H', `${name}: ${value}`);
    if (spec.chunked) args.push('-H', 'Transfer-Encoding: chunked');
    args.push('--form-string', `json=${spec.json}`, '-F', `=@${spec.imageFile};filename=dish.png;type=image/png`, spec.url);
    const { code, stdout, stderr } = await run('curl', args, {});
    if (code !== 0 || stderr !== '') return { error: `curl exited ${code}: ${stderr}` };
    // The last header block is the final response (after any 100 Continue).
    const blocks = readFileSync(headerFile, 'latin1').trim().split(/\r\n\r\n/);
    const lines = blocks[blocks.length - 1].split('\r\n').slice(1);
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    return { status: Number(stdout), headers, body: readFileSync(bodyFile, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
