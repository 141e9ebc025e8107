import type { BranchesService } from '../branches/branches.service.js';
import type { ClientsService } from '../clients/clients.service.js';
import type { MenusImportService } from '../menus/menus-import.service.js';
import type { VisitsImportService } from '../visits/visits-import.service.js';
import { demoClients, type DemoMenu } from './demo-data.js';

/** Where the demo's data would go: the features that hold it. */
export interface DemoStores {
  clients: ClientsService;
  branches: BranchesService;
  menus: MenusImportService;
  visits: VisitsImportService;
}

/** The ids held here by another client than the demo gives them to, each said as a line. */
function othersOf<K extends string | number>(kind: string, demo: Map<K, number>, held: Map<K, number>): string[] {
  return [...held].flatMap(([id, clientId]) => (demo.get(id) === clientId ? [] : [`${kind} ${typeof id === 'string' ? `'${id}'` : id} belongs to client ${clientId}, not ${demo.get(id)}`]));
}

/**
 * What the database holds under the demo's ids that is not the demo's, each said as a line:
 * a client of the demo's id under another name (an operator's own), and a brand, branch, menu
 * or visit of the demo's id that another client has. The importers would refuse each of these
 * only when they came to it, after the demo's clients, brands and branches were written over
 * an operator's own (their names replaced by the demo's). Empty for an empty database, and for
 * one the demo was loaded into before (it is loaded again over itself).
 */
export async function demoConflicts(stores: DemoStores, menus: DemoMenu[], visitClients: Map<number, number>): Promise<string[]> {
  const conflicts: string[] = [];
  const demo = demoClients();
  const held = new Map((await stores.clients.listClients()).map((c) => [c.id, c.name]));
  for (const client of demo) {
    const name = held.get(client.id);
    if (name !== undefined && name !== client.name) conflicts.push(`client ${client.id} is ${JSON.stringify(name)} here, not the demo's ${JSON.stringify(client.name)}`);
    for (const brand of client.brands) {
      const found = await stores.clients.findBrand(brand.id);
      if (found && found.clientId !== client.id) conflicts.push(`brand ${brand.id} belongs to client ${found.clientId}, not ${client.id}`);
    }
  }
  const branchClients = new Map(demo.flatMap((c) => c.branches.map((b) => [b.id, c.id] as const)));
  conflicts.push(...othersOf('branch', branchClients, await stores.branches.clientsOf([...branchClients.keys()])));
  const menuClients = new Map(menus.map((m) => [m.id, m.clientId]));
  conflicts.push(...othersOf('menu', menuClients, await stores.menus.clientsOf([...menuClients.keys()])));
  conflicts.push(...othersOf('visit', visitClients, await stores.visits.clientsOf([...visitClients.keys()])));
  return conflicts;
}
