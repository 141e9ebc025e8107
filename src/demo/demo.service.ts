import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { CredentialsService, type IssuedCredential } from '../auth/credentials.service.js';
import { OperatorError } from '../common/operator-error.js';
import { ALL_SCOPES, Scope } from '../auth/scopes.js';
import { BranchesService } from '../branches/branches.service.js';
import { ClientsService } from '../clients/clients.service.js';
import { localDate } from '../common/clock.js';
import { writeDurably } from '../common/durable-file.js';
import type { ImportReport } from '../common/import-report.js';
import { AppConfig } from '../config/app-config.js';
import { oneProcessAtATime } from '../database/migration-tools.js';
import { MenusImportService } from '../menus/menus-import.service.js';
import { VisitsImportService } from '../visits/visits-import.service.js';
import { DemoReviews, demoClients, demoMenus, eachDemoVisit } from './demo-data.js';
import { demoConflicts } from './demo-conflicts.js';
import { writeDemoImage } from './demo-images.js';

export const DEMO_CREDENTIALS_FILE = 'demo-credentials.json';

export interface DemoCredentials {
  note: string;
  baseUrl: string;
  credentials: (IssuedCredential & { label: string; clients: number[]; scopes: string[] })[];
}

export interface DemoSummary {
  clients: number;
  branches: number;
  visits: number;
  menus: number;
  credentialsFile: string;
}

/** The demo data set: loaded through the same importers an operator uses. */
@Injectable()
export class DemoService {
  private readonly logger = new Logger('Demo');

  constructor(
    private readonly clients: ClientsService,
    private readonly branches: BranchesService,
    private readonly visits: VisitsImportService,
    private readonly menus: MenusImportService,
    private readonly credentials: CredentialsService,
    private readonly config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  get credentialsPath(): string {
    return resolve(this.config.DATA_DIR, DEMO_CREDENTIALS_FILE);
  }

  /**
   * Seeds the demo set into an empty database; a database with any client is left alone, but
   * for one a seeding left unfinished (see interruptedSeed), which is seeded again. Replicas
   * starting together on one empty database seed it once: the look and the load run one
   * process at a time, and a process that waited finds what the first wrote.
   */
  seedIfEmpty(): Promise<boolean> {
    return oneProcessAtATime(this.db, 'demo', 'the demo seeding', async () => {
      if (await this.clients.anyClient()) {
        if (!(await this.interruptedSeed())) return false;
        this.logger.warn('The demo seeding was stopped before it issued the demo credentials: loading the demo data set again');
      } else {
        this.logger.log('Empty database: loading the demo data set');
      }
      await this.loadHere();
      return true;
    });
  }

  /**
   * Whether the database holds what a demo seeding stopped part way (a Ctrl-C during the first
   * start) leaves: no credential (issued last), and no client but the demo's, as the demo names
   * them. Loading the demo again over it writes what is missing; what is there is written again
   * unchanged. A database with a client of its own, or any credential, is not touched.
   */
  private async interruptedSeed(): Promise<boolean> {
    if ((await this.credentials.list()).length > 0) return false;
    const demo = new Map(demoClients().map((c) => [c.id, c.name]));
    return (await this.clients.listClients()).every((c) => demo.get(c.id) === c.name);
  }

  /** Loads (or refreshes) the demo data and issues fresh demo credentials; not beside a seeding replica. */
  load(): Promise<DemoSummary> {
    return oneProcessAtATime(this.db, 'demo', 'the demo seeding', () => this.loadHere());
  }

  private async loadHere(): Promise<DemoSummary> {
    // The credentials file goes there at the end: a folder that cannot be made fails the load before anything is written.
    await mkdir(this.config.DATA_DIR, { recursive: true });
    const today = localDate(this.config.RESULTS_TIMEZONE);
    const work = await mkdtemp(join(tmpdir(), 'results-demo-'));
    try {
      // Every file first, then what the database holds of another's, then the writes: a load
      // refused part way left the demo's names on an operator's own client and menus.
      // Written as they are made: a year of visits is more than the heap holds at once.
      const visitsFile = join(work, 'visits.ndjson');
      const reviews = new DemoReviews();
      const visitClients = new Map<number, number>();
      await writeJsonLines(visitsFile, eachDemoVisit({ today, days: this.config.DEMO_DAYS, zone: this.config.RESULTS_TIMEZONE }), (visit) => {
        reviews.see(visit);
        visitClients.set(visit.visitId as number, visit.clientId as number);
      });
      const allMenus = demoMenus(today);
      const conflicts = await demoConflicts({ clients: this.clients, branches: this.branches, menus: this.menus, visits: this.visits }, allMenus, visitClients);
      if (conflicts.length > 0) {
        const shown = conflicts.slice(0, 5).join('; ');
        const more = conflicts.length > 5 ? `; and ${conflicts.length - 5} more` : '';
        throw new OperatorError(`the demo data set needs a database without data of its ids that is not the demo's (nothing was written): ${shown}${more}`);
      }

      let branches = 0;
      for (const client of demoClients()) {
        await this.clients.addClient(client.id, client.name);
        for (const brand of client.brands) await this.clients.addBrand(client.id, brand.id, brand.name);
        const file = join(work, `branches-${client.id}.json`);
        await writeFile(file, JSON.stringify(client.branches));
        branches += check(await this.branches.importFile(client.id, file));
      }
      const visits = check(await this.visits.importFile(visitsFile));
      // Then the reviews of the latest mystery visits, re-scored: the change feed shows them last.
      const reviewsFile = join(work, 'reviews.ndjson');
      await writeJsonLines(reviewsFile, reviews.reviews());
      check(await this.visits.importFile(reviewsFile));

      let menus = 0;
      for (const clientId of [...new Set(allMenus.map((m) => m.clientId))]) {
        const own = allMenus.filter((m) => m.clientId === clientId);
        for (const menu of own) {
          for (const dish of menu.dishes) await writeDemoImage(work, dish.image, dish.description.split(/[,.]/)[0] ?? dish.code);
        }
        const file = join(work, `menus-${clientId}.json`);
        const records = own.map(({ clientId: _c, dishes, ...menu }) => ({
          ...menu,
          dishes: dishes.map(({ image, ...dish }) => ({ ...dish, image: image.file })),
        }));
        await writeFile(file, JSON.stringify(records));
        menus += check(await this.menus.importFile(clientId, file));
      }
      await this.issueCredentials();
      return { clients: demoClients().length, branches, visits, menus, credentialsFile: this.credentialsPath };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async issueCredentials(): Promise<void> {
    // The demo credentials issued before are disabled: the file keeps only the newest, whose secrets it shows.
    const earlier = await this.readCredentials();
    if (earlier && (await this.issuedHere(earlier))) for (const c of earlier.credentials) await this.credentials.disable(c.clientId);
    const everything = ALL_SCOPES.filter((s) => s !== Scope.Api);
    const standard = [Scope.VisitsStandard, Scope.Branches, Scope.Menus];
    const made = [
      await this.credentials.make({ clients: [1001], scopes: everything, name: 'Demo: Acme Dining (all scopes)' }),
      await this.credentials.make({ clients: [1002], scopes: standard, name: 'Demo: Northern Taverns (standard)' }),
    ];
    const [full, limited] = made.map((m) => m.issued);
    const file: DemoCredentials = {
      note: 'Demo credentials of the embedded demo data set. Shown here only because this is a demo database.',
      baseUrl: this.config.baseUrl,
      credentials: [
        { label: 'Acme Dining, every scope', clients: [1001], scopes: [Scope.Api, ...everything], ...full },
        { label: 'Northern Taverns, standard scopes', clients: [1002], scopes: [Scope.Api, ...standard], ...limited },
      ],
    };
    // Whole on the disk before the start goes on: the secrets are stored only as hashes, so a
    // file cut by a power loss could never be written again (a file-system fault left it empty).
    // And on the disk before the credentials it names are stored, both in one transaction: a
    // process stopped in between (SIGKILL, a node lost) leaves a file naming credentials the
    // database does not hold, and a database without credentials, which the next start seeds
    // again (interruptedSeed) over that file. Stored first, a stop before the file left
    // credentials whose secrets nobody holds, and a database never seeded again: no
    // credentials file, none shown.
    await writeDurably(this.credentialsPath, `${JSON.stringify(file, null, 2)}\n`, 0o600);
    await this.credentials.store(made);
  }

  /** Whether the credentials of the file are in this database. */
  private async issuedHere(demo: DemoCredentials): Promise<boolean> {
    try {
      for (const c of demo.credentials) await this.credentials.assertExists(c.clientId);
      return demo.credentials.length > 0;
    } catch {
      return false;
    }
  }

  async readCredentials(): Promise<DemoCredentials | null> {
    try {
      return JSON.parse(await readFile(this.credentialsPath, 'utf8')) as DemoCredentials;
    } catch {
      return null;
    }
  }

  /**
   * Tells a newcomer where the API is and how to call it (in a demo, as plain lines): the
   * address the process listens on, and the addresses to open, which are under PUBLIC_BASE_URL when it is set (behind a
   * proxy or ingress the listening address is not the one a browser can reach).
   */
  async announce(url: string): Promise<void> {
    const local = url.replace('[::1]', 'localhost').replace('127.0.0.1', 'localhost');
    const lines = [`Results service listening on ${local}`];
    const base = this.config.PUBLIC_BASE_URL ? this.config.baseUrl : local;
    if (!this.config.SEED_DEMO) {
      // Outside a demo, stdout is the log's, read by a collector parsing JSON: the addresses are
      // one line of it, as pino writes an info line, whatever LOG_LEVEL says (the line that
      // tells an operator, and a script that started the process, that it serves).
      const fields = { msg: lines[0], ...(this.config.PUBLIC_BASE_URL ? { publicAddress: base } : {}), swaggerUi: `${base}/docs` };
      process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, hostname: hostname(), context: 'Start', ...fields })}\n`);
      return;
    }
    if (this.config.PUBLIC_BASE_URL) lines.push(`Public address: ${base}`);
    lines.push(`Swagger UI: ${base}/docs`);
    // Only the demo's own credentials, in the demo's own database: not a file that another
    // database's demo left in DATA_DIR (a production start after a local demo, say).
    const demo = this.config.SEED_DEMO ? await this.readCredentials() : null;
    if (demo && (await this.issuedHere(demo))) {
      lines.push(`Demo credentials (${this.credentialsPath}):`);
      for (const c of demo.credentials) {
        // What an operator has since disabled or revoked is not offered as working.
        const unusable = await this.credentials.whyUnusable(c);
        lines.push(
          unusable === null
            ? `  ${c.label}: client_id=${c.clientId} client_secret=${c.clientSecret} svc-api-key=${c.apiKey}`
            : `  ${c.label}: client_id=${c.clientId} (not usable: ${unusable})`,
        );
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

function check(report: ImportReport): number {
  if (report.rejected.length > 0) {
    throw new Error(`demo import of ${report.file} rejected records: ${JSON.stringify(report.rejected.slice(0, 3))}`);
  }
  return report.imported;
}

/** Writes each item as a line of JSON, at the pace the file takes them; `seen` is told each one. */
async function writeJsonLines<T>(path: string, items: Iterable<T>, seen: (item: T) => void = () => undefined): Promise<void> {
  const out = createWriteStream(path);
  try {
    for (const item of items) {
      seen(item);
      if (!out.write(`${JSON.stringify(item)}\n`)) await once(out, 'drain');
    }
  } finally {
    out.end();
  }
  await finished(out);
}
