/**
 * The visit types a credential may be restricted to. Auth declares what it needs and the
 * visits feature provides it (VisitTypesModule), so auth does not import visits, which
 * imports auth's guards and entitlements: the dependency runs one way.
 */
export abstract class VisitTypeCatalogue {
  /** The codes of every known visit type, upper case. */
  abstract codes(): Promise<ReadonlySet<string>>;
}
