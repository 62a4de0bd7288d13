/**
 * What the application layer's use cases need from the process that runs them (the API, the
 * console, the worker, the admin CLI), handed in by the composition (src/app.ts, src/worker.ts):
 * below-the-line machinery through the ports the application declares (./ports.ts).
 */
import type { Config } from '../../config';
import type { Sql } from '../../db';
import type { ApiKeyId, OrganizationId, UserId } from '../../domain/ids';
import type { Launcher, NetworkPort } from './ports';

export type ServiceDeps = {
  config: Config;
  sql: Sql;
  /** Starts the workflows of what a use case committed (after the commit). */
  launcher: Launcher;
  /** The mobile networks (sandbox and connected operators). */
  networks: NetworkPort;
};

/**
 * Through what a write came, for the audit trail (src/services/merchants/audit.ts): the acting user, the API
 * key's id (null in the console), the channel, the client's address and the route.
 */
export type AuditContext = {
  userId: UserId;
  apiKeyId: ApiKeyId | null;
  channel: 'api' | 'console';
  clientAddress: string | null;
  action: string;
};

/**
 * Who acts: an API key's or a console session's organization and user. `audit` is set on writes
 * through the API and the console: every change such a write makes is recorded with it.
 */
export type Actor = { organizationId: OrganizationId; userId: UserId; audit?: AuditContext };

/** Who acts on an organization's settings: an Actor, or the admin CLI (`{ organizationId }` alone, not recorded). */
export type OrganizationActor = Pick<Actor, 'organizationId' | 'audit'>;
