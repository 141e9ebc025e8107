import type { Request } from 'express';

/** The caller of a data request, once its API key and token have been checked. */
export interface Principal {
  /** The credential's OAuth client id. */
  clientId: string;
  /** Display prefix of the API key used. */
  keyPrefix: string;
  /** Scopes the token carries. */
  scopes: Set<string>;
  /** Client ids (SvcClientId) the credential may read. */
  clients: ReadonlySet<number>;
  /** Brand ids it may read; null for all. */
  brands: ReadonlySet<number> | null;
  /** Visit type codes it may read; null for all. */
  visitTypes: ReadonlySet<string> | null;
  /** Brands a query may name (SvcBrandId): its own, or without a restriction every brand of its clients. */
  selectableBrands: ReadonlySet<number>;
  /** Visit types a query may name (VisitTypes): its own, or without a restriction every known type. */
  selectableVisitTypes: ReadonlySet<string>;
}

/** The API key check's result, kept on the request for the token check that follows. */
export interface KeyHolder {
  credentialId: string;
  keyPrefix: string;
}

export interface AuthenticatedRequest extends Request {
  apiKey?: KeyHolder;
  principal?: Principal;
}
