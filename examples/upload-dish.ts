/**
 * Adds a dish with its image to a menu (or replaces the dish of that code on it), then reads
 * back the image the service stored. Types come from the published contract:
 *   npx openapi-typescript https://results.example.com/docs/openapi.json -o results-api.ts
 * Run: BASE_URL=… API_KEY=… CLIENT_ID=… CLIENT_SECRET=… SVC_CLIENT_ID=1001 node upload-dish.js dish.json photo.jpg
 */
import { readFile } from 'node:fs/promises';
import createClient from 'openapi-fetch';
import type { components, paths } from '../test/generated/results-api.js';

type DishInput = components['schemas']['DishInputDto'];
type Dish = components['schemas']['DishDto'];

export interface UploadOptions {
  baseUrl: string;
  apiKey: string;
  clientId: string;
  clientSecret: string;
  svcClientId: number;
  dish: DishInput;
  /** The image's bytes and type: image/jpeg, image/png or image/webp. */
  image: Uint8Array;
  imageType: string;
}

/** Posts the dish and its image; the dish as stored, and the bytes its `image.url` serves. */
export async function uploadDish(o: UploadOptions): Promise<{ dish: Dish; image: ArrayBuffer }> {
  const api = createClient<paths>({ baseUrl: o.baseUrl, headers: { 'svc-api-key': o.apiKey } });
  // The client's id and secret in HTTP Basic (client_secret_basic); the form holds the grant only.
  const basic = Buffer.from(`${encodeURIComponent(o.clientId)}:${encodeURIComponent(o.clientSecret)}`).toString('base64');
  const token = await api.POST('/connect/token', {
    body: { grant_type: 'client_credentials' },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Basic ${basic}` },
  });
  if (!token.data) throw new Error(`token request failed: ${token.response.status} ${JSON.stringify(token.error)}`);
  const headers = { Authorization: `Bearer ${token.data.access_token}` };

  const posted = await api.POST('/menus/dishes', {
    params: { query: { SvcClientId: o.svcClientId } },
    headers,
    // The contract's image part is a string of binary format, so the form is made here: the
    // image as a file part (fetch writes the multipart boundary), the dish as JSON text.
    body: { file: '', json: JSON.stringify(o.dish) },
    bodySerializer: (body) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(o.image)], { type: o.imageType }), 'image');
      form.append('json', body.json);
      return form;
    },
  });
  if (!posted.data) throw new Error(`upload failed: ${posted.response.status} ${JSON.stringify(posted.error)}`);
  const { dish } = posted.data.data;
  if (!dish.image) throw new Error('the stored dish has no image');

  // The image's id is the last segment of its URL's path; parseAs keeps its bytes from being read as JSON.
  const imageId = new URL(dish.image.url).pathname.split('/').pop()!;
  const image = await api.GET('/menus/dishes/images/{imageId}', {
    params: { path: { imageId }, query: { SvcClientId: o.svcClientId } },
    headers,
    parseAs: 'arrayBuffer',
  });
  if (!image.data) throw new Error(`image request failed: ${image.response.status} ${JSON.stringify(image.error)}`);
  return { dish, image: image.data };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = (name: string): string => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
  const [dishFile, imageFile] = process.argv.slice(2);
  if (!dishFile || !imageFile) throw new Error('usage: node upload-dish.js dish.json photo.jpg');
  const types: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };
  const { dish, image } = await uploadDish({
    baseUrl: env('BASE_URL'),
    apiKey: env('API_KEY'),
    clientId: env('CLIENT_ID'),
    clientSecret: env('CLIENT_SECRET'),
    svcClientId: Number(env('SVC_CLIENT_ID')),
    dish: JSON.parse(await readFile(dishFile, 'utf8')) as DishInput,
    image: await readFile(imageFile),
    imageType: types[imageFile.split('.').pop()!.toLowerCase()] ?? 'application/octet-stream',
  });
  console.log(`dish ${dish.id} (${dish.code}) stored; its image: ${image.byteLength} bytes at ${dish.image!.url}`);
}
