/** The scopes of the API (docs/interface.md, "Authentication"). */
export const Scope = {
  Api: 'svc-results-api',
  VisitsStandard: 'visits/standard.read',
  VisitsPlus: 'visits/plus.read',
  Branches: 'branches/standard.read',
  Menus: 'menus/standard.read',
  DishesWrite: 'menus/dishes/standard.write',
} as const;

export type ScopeName = (typeof Scope)[keyof typeof Scope];

export const ALL_SCOPES: readonly ScopeName[] = Object.values(Scope);

export const SCOPE_DESCRIPTIONS: Record<ScopeName, string> = {
  'svc-results-api': 'The results API itself; must be in any scope a token request supplies.',
  'visits/standard.read': 'GET /visits/standard',
  'visits/plus.read': 'GET /visits/plus',
  'branches/standard.read': 'GET /branches',
  'menus/standard.read': 'GET /menus, GET /menus/dishes and GET /menus/dishes/images/{imageId}',
  'menus/dishes/standard.write': 'POST /menus/dishes',
};

export function isScope(value: string): value is ScopeName {
  return (ALL_SCOPES as readonly string[]).includes(value);
}

/** Whether scopes let a credential read visits (standard or plus): what its webhook events are about. */
export function readsVisits(scopes: readonly string[]): boolean {
  return scopes.includes(Scope.VisitsStandard) || scopes.includes(Scope.VisitsPlus);
}
