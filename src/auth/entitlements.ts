import { ProblemException } from '../common/problem.js';
import { visitTypeCodes } from '../common/query-fields.js';
import { accessTokenRequired } from './challenges.js';
import type { Principal } from './principal.js';

/** The parameters by which a request selects data; each is checked against the credential. */
export interface EntitledSelection {
  SvcClientId: number;
  SvcBrandId?: number;
  /** Codes as a list or as the comma-separated parameter text. */
  VisitTypes?: string[] | string;
}

/**
 * What a request may read: the query's filters intersected with the credential's entitlement.
 * A list is the whole of what may be read (an empty list: nothing); null means no restriction.
 * Data is only ever read through this, never through the query's own filters.
 */
export interface EffectiveSelection {
  clientId: number;
  /** Brand ids, ascending; null for every brand of the client (and rows without a brand). */
  brandIds: readonly number[] | null;
  /** Visit type codes, upper-case and sorted; null for every type. */
  visitTypes: readonly string[] | null;
}

/**
 * The one place that decides what a credential may read of the data a query selects: its
 * clients, its brands (all by default) and its visit types (all by default). A filter outside
 * the entitlement is a 403; without a filter, the entitlement itself is the filter.
 */
export function effectiveSelection(principal: Principal | undefined, selection: EntitledSelection): EffectiveSelection {
  if (!principal) throw accessTokenRequired();
  const { SvcClientId: clientId, SvcBrandId: brand } = selection;
  if (!principal.clients.has(clientId)) throw notEntitled(`SvcClientId ${clientId}`);

  // A brand or type named outside what the credential may name is a 403: without a restriction
  // that is every brand of its clients and every known type (an unknown one, another client's).
  const entitledBrands = principal.brands;
  if (brand !== undefined && !principal.selectableBrands.has(brand)) throw notEntitled(`SvcBrandId ${brand}`);
  const brandIds = brand !== undefined ? [brand] : entitledBrands ? [...entitledBrands].sort((a, b) => a - b) : null;

  const asked = visitTypeCodes(selection.VisitTypes);
  const entitledTypes = principal.visitTypes;
  const refused = asked.filter((t) => !principal.selectableVisitTypes.has(t));
  if (refused.length > 0) throw notEntitled(`the visit type(s) ${refused.join(', ')}`);
  const visitTypes = asked.length > 0 ? asked : entitledTypes ? [...entitledTypes].sort() : null;

  return { clientId, brandIds, visitTypes };
}

function notEntitled(what: string): ProblemException {
  return new ProblemException(403, `The credential is not entitled to ${what}.`);
}

/**
 * A 403 for a resource of another client than the query's SvcClientId (a menu, an image): it
 * names the query's client, since a credential of several clients may read it under its own.
 */
export function ofAnotherClient(what: string, clientId: number): ProblemException {
  return new ProblemException(403, `${what} of SvcClientId ${clientId}.`);
}
