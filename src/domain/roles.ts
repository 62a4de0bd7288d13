/**
 * Roles: every console user holds one, and every API key one (or its user's). A role grants
 * capabilities; every API route and console page names the one capability it needs (the `can`
 * macro, the console's `page`/`action` macros), so the table in README is read off the routes.
 *
 * A key acts as the user who issued it, so it may do what both its own role and its user's current
 * role allow: demoting a user narrows their keys at once.
 */

export const ROLES = ['owner', 'admin', 'developer', 'finance', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** What each role is for, as the console's user and key forms show it. */
export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  owner: 'Everything, including granting and removing the owner role.',
  admin: 'Everything but the owner role: users, settings, keys, webhooks, money and statements.',
  developer:
    'API keys and webhooks, contacts and collection requests; reads everything but statements and the audit trail.',
  finance: 'Payments, bulk payouts, reversals, statements and settlement reports, contacts and collection requests.',
  viewer: 'Reads everything but webhooks, keys and the audit trail; changes nothing.',
};

/**
 * The capabilities routes and pages need. `view`: read the organization's records. `collect`:
 * money in (contacts, collection requests, collection decisions, the sandbox's tools). `pay`: money
 * out (payments, batches, reversals). `reconcile`: statements and settlement reports. `integrate`:
 * API keys and webhooks (README.md#roles).
 * `administer`: users and the organization's settings. `audit`: the audit trail.
 */
export const CAPABILITIES = ['view', 'collect', 'pay', 'reconcile', 'integrate', 'administer', 'audit'] as const;
export type Capability = (typeof CAPABILITIES)[number];

const GRANTS: Record<Role, readonly Capability[]> = {
  owner: CAPABILITIES,
  admin: CAPABILITIES,
  developer: ['view', 'collect', 'integrate'],
  finance: ['view', 'collect', 'pay', 'reconcile'],
  viewer: ['view', 'reconcile'],
};

export const isRole = (value: unknown): value is Role =>
  typeof value === 'string' && (ROLES as readonly string[]).includes(value);

/** What a user of `role` may do, through a key of `keyRole` when one acts for them (null: the user's own role). */
export function capabilitiesOf(role: Role, keyRole: Role | null = null): Capability[] {
  const granted = GRANTS[role];
  return keyRole === null ? [...granted] : GRANTS[keyRole].filter((capability) => granted.includes(capability));
}

/** The roles that hold `capability`, most powerful first. */
export const rolesWith = (capability: Capability): Role[] => ROLES.filter((role) => GRANTS[role].includes(capability));

/**
 * The roles a key issued by a user of `role` may hold: none that could do more than its user, and
 * the owner role only for an owner's key (an admin's key labelled `owner` would outrank its user).
 */
export const keyRolesFor = (role: Role): Role[] =>
  ROLES.filter(
    (candidate) =>
      (candidate !== 'owner' || role === 'owner') &&
      GRANTS[candidate].every((capability) => GRANTS[role].includes(capability)),
  );

/**
 * Whether a user of `role` may revoke a key: their own always; another user's only with `administer` (owners and
 * admins).
 */
export const mayRevokeKey = (role: Role, ownKey: boolean): boolean => ownKey || GRANTS[role].includes('administer');

/**
 * Whether a user of role `actor` may give `target` the role `next` (or remove them, `next` null):
 * administering users is for owners and admins; only an owner touches the owner role, on either side.
 */
export function mayAssignRole(actor: Role, target: Role, next: Role | null): boolean {
  if (!GRANTS[actor].includes('administer')) return false;
  return actor === 'owner' || (target !== 'owner' && next !== 'owner');
}

/** The OpenAPI extension on each operation that lists the roles allowed to call it. */
export const ROLES_EXTENSION = 'x-roles';

/**
 * The OpenAPI extension on a read whose query can ask it to write (a claim): by query parameter,
 * the roles allowed to ask (src/http/query-writes.ts).
 */
export const PARAMETER_ROLES_EXTENSION = 'x-parameter-roles';

/**
 * Where a route's `detail` keeps the capability it needs. A string, not the list of roles: Elysia
 * merges a macro's `detail` into the route's own, which concatenates arrays each time an app is
 * built from the same route options.
 */
export const CAPABILITY_DETAIL = 'x-capability';

/** The roles allowed to call a route, from its `detail`; none for a route that needs no key or session. */
export function rolesOfDetail(detail: unknown): Role[] {
  const capability = (detail as Record<string, unknown> | undefined)?.[CAPABILITY_DETAIL];
  return (CAPABILITIES as readonly unknown[]).includes(capability) ? rolesWith(capability as Capability) : [];
}
