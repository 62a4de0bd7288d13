/** Organizations, their keys and console users, and their settings (collection verification, throttle, API version). */
import { formatApiVersion, parseApiVersion } from '../domain/versions';
import { checkCallbackUrl } from '../formats/urls';
import { ROLES, isRole } from '../domain/roles';
import {
  createApiKey,
  createOrganization,
  setApiVersion,
  updateCollectionSettings,
  verificationUrlRules,
} from '../services/merchants/organizations';
import { setThrottleLimits } from '../services/platform/throttling';
import { UserInputError, createUser } from '../services/merchants/users';
import { UsageError, organizationId, print, type Command } from './cli';

/** A per-window limit: a positive whole number, or `default` for the configured one (stored as null). */
function throttleLimit(option: string, raw: string | undefined): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'default') return null;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1)
    throw new UsageError(`--${option} takes a positive whole number or "default"`);
  return Number(raw);
}

export const organizationCommands: Record<string, Command> = {
  'org create': {
    usage: 'org create --name NAME [--json]',
    async run({ sql, values }) {
      if (!values.name?.trim()) throw new UsageError('--name is required');
      const created = await createOrganization(sql, values.name.trim());
      print(values.json, created, [
        `organization ${created.organization.id} (${created.organization.name})`,
        `user ${created.user.id}, its ${created.user.role}`,
        `API key ${created.apiKey}  (shown once; only its digest is stored)`,
      ]);
    },
  },
  'key create': {
    usage: 'key create --org ID [--json]',
    async run({ sql, values }) {
      const created = await createApiKey(sql, organizationId(values.org));
      print(values.json, created, [`API key ${created.apiKey}  (shown once; only its digest is stored)`]);
    },
  },
  'user create': {
    usage: `user create --org ID --email EMAIL --password PASSWORD [--role ${ROLES.join('|')}] [--json]`,
    async run({ sql, values }) {
      const org = organizationId(values.org);
      if (!values.email) throw new UsageError('--email is required');
      if (!values.password) throw new UsageError('--password is required');
      const role = values.role ?? 'viewer';
      if (!isRole(role)) throw new UsageError(`--role takes one of ${ROLES.join(', ')}`);
      let user;
      try {
        user = await createUser(sql, { organizationId: org, email: values.email, password: values.password, role });
      } catch (error) {
        if (error instanceof UserInputError)
          throw new UsageError(`--${error.field}: ${error.message}`, { cause: error });
        throw error;
      }
      print(values.json, { user }, [
        `console user ${user.id} (${user.email}) in organization ${org}, role ${user.role}`,
      ]);
    },
  },
  'settings set': {
    usage: 'settings set --org ID [--verification-url URL] [--accept-by-default true|false] [--json]',
    async run({ sql, values, config }) {
      const acceptByDefault = values['accept-by-default'];
      if (acceptByDefault !== undefined && !['true', 'false'].includes(acceptByDefault))
        throw new UsageError('--accept-by-default takes true or false');
      let verificationUrl = values['verification-url'];
      if (verificationUrl !== undefined && verificationUrl !== '') {
        const checked = checkCallbackUrl(verificationUrl, verificationUrlRules(config.sandbox));
        if (checked.problem !== undefined) throw new UsageError(`--verification-url: ${checked.problem}`);
        verificationUrl = checked.url;
      }
      const settings = await updateCollectionSettings(
        sql,
        { organizationId: organizationId(values.org) },
        {
          ...(verificationUrl !== undefined
            ? { verificationUrl: verificationUrl === '' ? null : verificationUrl }
            : {}),
          ...(acceptByDefault !== undefined ? { acceptByDefault: acceptByDefault === 'true' } : {}),
        },
      );
      print(values.json, settings, [
        [
          `organization ${settings.id}: verification URL ${settings.verificationUrl ?? '(none)'},`,
          `accept by default ${settings.acceptByDefault}`,
        ].join(' '),
      ]);
    },
  },
  'throttle set': {
    usage: 'throttle set --org ID [--reads N|default] [--writes N|default] [--json]',
    async run({ sql, values, config }) {
      const reads = throttleLimit('reads', values.reads);
      const writes = throttleLimit('writes', values.writes);
      if (reads === undefined && writes === undefined) throw new UsageError('throttle set needs --reads or --writes');
      const limits = await setThrottleLimits(sql, organizationId(values.org), { reads, writes });
      const shown = (limit: number | null, fallback: number) =>
        limit === null ? `${fallback} (default)` : String(limit);
      print(values.json, limits, [
        [
          `organization ${limits.id}: ${shown(limits.reads, config.throttle.reads)} reads`,
          `and ${shown(limits.writes, config.throttle.writes)} writes per ${config.throttle.windowSeconds} s`,
        ].join(' '),
      ]);
    },
  },
  'version set': {
    usage: 'version set --org ID --version v1|v2|v3|v4 [--json]',
    async run({ sql, values }) {
      const version = parseApiVersion(values.version ?? '');
      if (version === null) throw new UsageError('--version takes v1, v2, v3 or v4');
      const saved = await setApiVersion(sql, organizationId(values.org), version);
      print(values.json, { id: saved.id, apiVersion: formatApiVersion(version) }, [
        `organization ${saved.id}: API version ${formatApiVersion(version)}`,
      ]);
    },
  },
};
