/**
 * Settings: the collection settings (verification URL, accept-by-default) with a test verification
 * sent through the worker's own guarded transport, how each network is reached and the health of
 * its routes, and users (created with a password and a role, given another role, removed), for
 * owners and admins; API keys (created with a role no wider than their user's and shown once,
 * revoked), for the roles that integrate too.
 */
import { randomBytes } from 'node:crypto';
import { Elysia } from 'elysia';
import {
  outgoingTransport,
  postVerification,
  type HttpAttempt,
  type VerificationRequest,
} from '../../outbound/merchant-http';
import {
  ROLES,
  ROLE_DESCRIPTIONS,
  isRole,
  keyRolesFor,
  mayRevokeKey,
  type Capability,
  type Role,
} from '../../domain/roles';
import type { AppDeps } from '../../http/context';
import { parseVerificationAnswer } from '../../domain/collections';
import { checkCallbackUrl } from '../../formats/urls';
import { describeConnections } from '../../network/connections';
import { CONNECTOR_OPERATORS, configuredRoutes } from '../../network/registry';
import { successRateText } from '../../domain/network-status';
import { routeLines, type RouteLine } from '../../services/networks/network-status';
import { KeyHolderRemoved, issueKeyForUser, listApiKeys, revokeApiKey } from '../../services/merchants/api-keys';
import { updateCollectionSettings, verificationUrlRules } from '../../services/merchants/organizations';
import { verificationSettingsOf } from '../../services/collections/collection-receiving';
import {
  UserInputError,
  createUser,
  findUser,
  listUsers,
  removeUser,
  setUserRole,
  type RoleChange,
} from '../../services/merchants/users';
import type { ConsoleSession } from '../../services/merchants/console-sessions';
import { html, type Html } from '../html';
import { consoleError, htmlResponse, redirect } from '../http';
import {
  actionButton,
  badge,
  checkbox,
  formErrors,
  input,
  layout,
  notice,
  postForm,
  sectionFrame,
  select,
  table,
  when,
  type FieldErrors,
  type Values,
} from '../layout';
import { listPage, type ListView } from '../list-page';
import { allows, consoleSessionPlugin, type FormFields } from '../session';
import { DONE_NOTICES, ownedId } from './common';

/** The console waits at most this long for a test verification (the worker waits VERIFICATION_TIMEOUT_SECONDS). */
const TEST_VERIFICATION_MAX_SECONDS = 15;

const SETTINGS_PAGES = [
  ['collections', '/console/settings', 'Collection settings', 'administer'],
  ['keys', '/console/settings/keys', 'API keys', 'integrate'],
  ['users', '/console/settings/users', 'Users', 'administer'],
] as const satisfies readonly (readonly [string, string, string, Capability])[];

/** The settings pages the user's role opens. */
const subnav = (
  session: ConsoleSession,
  current: (typeof SETTINGS_PAGES)[number][0],
) => html`<nav class="actions" aria-label="Settings">
${SETTINGS_PAGES.filter(([, , , capability]) => allows(session, capability)).map(
  ([key, href, label]) => html`<a href="${href}"${key === current ? html` aria-current="page"` : ''}>${label}</a>`,
)}</nav>`;

const roleChoices = (roles: readonly Role[]) =>
  roles.map((role) => [role, `${role}: ${ROLE_DESCRIPTIONS[role]}`] as const);

/** What a refused role change says (the form's 400 or 403). */
const ROLE_CHANGE_REFUSALS: Record<Exclude<RoleChange, 'done'>, [number, string]> = {
  'not found': [404, 'No such user in your organization.'],
  'not allowed': [403, 'Only an owner gives or takes away the owner role.'],
  'last owner': [400, 'The organization needs an owner: make another user owner first.'],
};

const text = (form: FormFields, name: string) => (typeof form[name] === 'string' ? (form[name] as string) : '');

function verificationResult(request: VerificationRequest, url: string, sent: HttpAttempt): Html {
  const answer =
    sent.statusCode === 200 ? parseVerificationAnswer(sent.responseExcerpt ?? '', request.remote_transaction_id) : null;
  const meaning =
    answer === null
      ? 'Without a 200 answer, the accept-by-default setting decides.'
      : answer.decision === 'accept'
        ? 'This answer accepts the payment.'
        : answer.decision === 'reject'
          ? `This answer rejects the payment${answer.reason ? ` (reason: ${answer.reason})` : ''}.`
          : `This answer cannot be read (${answer.detail}); the accept-by-default setting decides.`;
  return notice(
    html`<p><strong>Test verification sent to ${url}</strong> for ${request.remote_transaction_id}:
${
  sent.statusCode === null
    ? html`no answer \
(${sent.error ?? 'no response'}).`
    : html`answered ${sent.statusCode} in ${sent.durationMs} ms.`
}</p>
${
  sent.responseExcerpt !== null
    ? html`<pre \
id="verification-answer">${sent.responseExcerpt}</pre>`
    : ''
}<p>${meaning}</p>`,
    answer?.decision === 'accept' || answer?.decision === 'reject' ? 'ok' : 'error',
  );
}

/**
 * Each network's routes for each operation, in the order they are tried, with their health: what
 * an operator reorders or pauses with `npm run admin -- network routes`.
 */
const routesSection = (
  lines: readonly RouteLine[],
) => html`<section class="card" id="network-routes"><h2>Network routes</h2>
<p class="muted">A network with more than one route is reached through the first that takes traffic: a route that \
faults \
three times in a row \
(no answer, a 5xx, the operator busy) is left for a while, then tried again with one operation. A subscriber's refusal \
is no fault of the route. \
Success rate: the last 15 minutes.</p>
${table(
  ['Network', 'Operation', 'Order', 'Route', 'State', 'Success rate', 'Last fault', 'When'],
  lines.map((line) => [
    line.network,
    line.operation,
    line.order,
    line.operator,
    badge(line.state),
    line.outcomes > 0
      ? html`${successRateText(line.successRate)} <span class="muted">of ${line.outcomes}</span>`
      : html`<span class="muted">${successRateText(null)}</span>`,
    line.lastFault ?? html`<span class="muted">none</span>`,
    when(line.lastFaultAt),
  ]),
  'No routes: no operator connector is on, so the sandbox serves every network.',
)}
</section>`;

export const settingsRoutes = (deps: AppDeps) => {
  const { sql, config } = deps;
  const frame = sectionFrame(config.sandbox, 'settings');
  const doneOf = (request: Request) => DONE_NOTICES[new URL(request.url).searchParams.get('done') ?? ''];

  type SettingsState = { done?: string; values?: Values; errors?: FieldErrors; test?: Html };

  const routes = configuredRoutes(config);

  async function collectionSettingsPage(
    session: ConsoleSession,
    state: SettingsState,
    status = 200,
  ): Promise<Response> {
    const settings = await verificationSettingsOf(sql, session.organizationId);
    const lines = await routeLines(sql, routes, CONNECTOR_OPERATORS, config.routesScope);
    const values = state.values ?? {
      verification_url: settings?.url ?? '',
      accept_by_default: settings?.acceptByDefault ? 'true' : 'false',
    };
    const errors = state.errors ?? {};
    const content = html`${subnav(session, 'collections')}${state.done ? notice(state.done) : ''}${state.test ?? ''}
<section class="card"><h2>Collection verification</h2>
<p class="muted">For each incoming collection on a network that supports it, the service POSTs its details to this URL \
and waits
${config.collections.verificationTimeoutSeconds} s \
for <code>ACCEPT &lt;id&gt;</code> or <code>REJECT &lt;id&gt; &lt;reason&gt;</code>.
${config.sandbox ? 'In sandbox mode http:// URLs are allowed.' : 'The URL must use https://.'}</p>
${formErrors(errors, ['verification_url', 'accept_by_default'])}
${postForm(
  session,
  '/console/settings',
  html`
${input('verification_url', 'Verification URL', values, errors, {
  type: 'url',
  hint: 'Leave empty to accept every collection without asking.',
})}
${checkbox('accept_by_default', 'Accept when the URL does not answer in time', values.accept_by_default === 'true')}
<div class="actions"><button type="submit" class="primary">Save settings</button></div>`,
)}
${
  settings?.url
    ? html`<h3>Test</h3><p>Sends a sample verification request to ${settings.url} and shows what it answered (the \
console waits at most ${Math.min(TEST_VERIFICATION_MAX_SECONDS, config.collections.verificationTimeoutSeconds)} s).</p>
${actionButton(session, '/console/settings/test-verification', 'Send a test verification')}`
    : ''
}
</section>
<section class="card" id="network-connections"><h2>Mobile networks</h2>
<p class="muted">How this service reaches each network that moves money. A connected operator is called with its own \
protocol; \
its callbacks only wake the payment's workflow, which then asks the operator itself.</p>
${table(
  ['Network', 'Currency', 'Connector', 'How'],
  describeConnections(config).map((connection) => [
    connection.network,
    connection.currency,
    connection.connector === 'none' ? html`<span class="muted">none</span>` : connection.connector,
    connection.detail,
  ]),
  'No networks.',
)}
</section>
${routesSection(lines)}`;
    return htmlResponse(layout(frame(session, 'Settings'), content), status);
  }

  const keyList = listPage(config, {
    path: '/console/settings/keys',
    section: 'settings',
    title: 'API keys',
    all: (session) => listApiKeys(sql, session.organizationId),
    columns: [
      ['Key', (key) => html`<code>${key.prefix}…</code>`],
      ['Acts as', (key) => key.userName],
      ['Role', (key) => key.role ?? html`<span class="muted">its user's</span>`],
      ['Created', (key) => when(key.created)],
      ['Status', (key) => (key.revokedAt ? html`${badge('revoked')} ${when(key.revokedAt)}` : badge('active'))],
      [
        '',
        (key, session) =>
          key.revokedAt || !mayRevokeKey(session.role, key.userId === session.userId)
            ? ''
            : actionButton(session, `/console/settings/keys/${key.id}/revoke`, 'Revoke', {}, 'danger'),
      ],
    ],
    empty: 'No API keys.',
    above: ({ session, state }: ListView<{ done?: string; created?: string }>) => html`${subnav(session, 'keys')}${
      state.done ? notice(state.done) : ''
    }
${
  state.created
    ? notice(html`<p><strong>New API key</strong> (shown this once; only its digest is stored):</p><p><code \
class="secret" id="new-api-key">${state.created}</code></p>
<p>Send it as <code>Authorization: Token &lt;key&gt;</code>.</p>`)
    : ''
}`,
    below: ({ session }) => html`<section class="card"><h2>New API key</h2><p class="muted">The key acts as you \
(${session.email}): it does what its role allows, and never more than your own role.</p>
${postForm(
  session,
  '/console/settings/keys',
  html`
${select(
  'role',
  'Role',
  [['', `Yours (${session.role}), whatever it becomes`], ...roleChoices(keyRolesFor(session.role))],
  {},
  {},
)}
<div class="actions"><button type="submit" class="primary">Create API key</button></div>`,
)}</section>`,
  });

  /** The roles a user of the session's role gives: an owner any, anyone else all but owner. */
  const assignableRoles = (session: ConsoleSession) =>
    ROLES.filter((role) => session.role === 'owner' || role !== 'owner');

  /** The user a role form or a remove button may act on: neither yourself nor, unless you are one, an owner. */
  const changeable = (user: { id: number; role: Role }, session: ConsoleSession) =>
    user.id !== session.userId && (session.role === 'owner' || user.role !== 'owner');

  const userList = listPage(config, {
    path: '/console/settings/users',
    section: 'settings',
    title: 'Users',
    all: (session) => listUsers(sql, session.organizationId),
    columns: [
      ['User', (user) => user.name],
      ['Email', (user) => user.email ?? html`<span class="muted">API only</span>`],
      ['Role', (user) => user.role],
      ['Created', (user) => when(user.created)],
      [
        '',
        (user, session) =>
          user.id === session.userId
            ? html`<span class="muted">you</span>`
            : changeable(user, session)
              ? html`${postForm(
                  session,
                  `/console/settings/users/${user.id}/role`,
                  html`
${select('role', `Role of ${user.name}`, roleChoices(assignableRoles(session)), { role: user.role }, {})}<button \
type="submit">Change \
role</button>`,
                  'inline',
                )}
${actionButton(session, `/console/settings/users/${user.id}/remove`, 'Remove', {}, 'danger')}`
              : '',
      ],
    ],
    empty: 'No users.',
    above: ({ session, state }: ListView<{ done?: string; values?: Values; errors?: FieldErrors }>) =>
      html`${subnav(session, 'users')}${state.done ? notice(state.done) : ''}`,
    below: ({ session, state }) => {
      const values = state.values ?? {};
      const errors = state.errors ?? {};
      return html`<section class="card"><h2>New user</h2>${formErrors(errors, ['email', 'password', 'name', 'role'])}
${postForm(
  session,
  '/console/settings/users',
  html`
${input('email', 'Email', values, errors, { type: 'email', required: true, autocomplete: 'off' })}
${input('name', 'Name', values, errors)}
${input('password', 'Password', {}, errors, {
  type: 'password',
  required: true,
  autocomplete: 'new-password',
  hint: 'At least 10 characters; give it to the user yourself.',
})}
${select('role', 'Role', roleChoices(assignableRoles(session)), { role: 'viewer', ...values }, errors)}
<div class="actions"><button type="submit" class="primary">Create user</button></div>`,
)}</section>`;
    },
  });

  async function otherUser(session: ConsoleSession, rawId: string) {
    const user = await findUser(sql, session.organizationId, ownedId(rawId, 'User'));
    if (!user) throw consoleError(404, 'No such user in your organization.');
    if (user.id === session.userId)
      throw consoleError(400, 'You cannot remove yourself or change your own role; ask another owner or admin.');
    return user;
  }

  /** A role from a form: one of the roles, or a 400 naming them. */
  function formRole(form: FormFields, allowed: readonly Role[]): Role {
    const role = text(form, 'role');
    if (!isRole(role) || !allowed.includes(role)) throw consoleError(400, `Choose a role among ${allowed.join(', ')}.`);
    return role;
  }

  /** The page after a role change or a removal, or its refusal. */
  function afterRoleChange(change: RoleChange, done: string): Response {
    if (change === 'done') return redirect(`/console/settings/users?done=${done}`);
    const [status, message] = ROLE_CHANGE_REFUSALS[change];
    throw consoleError(status, message);
  }

  return new Elysia({ name: 'console-settings' })
    .use(consoleSessionPlugin(deps))
    .get('/console/settings', ({ request, session }) => collectionSettingsPage(session, { done: doneOf(request) }), {
      page: 'administer',
    })
    .post(
      '/console/settings',
      async ({ session, form }) => {
        const raw = text(form, 'verification_url').trim();
        const acceptByDefault = text(form, 'accept_by_default') === 'true';
        let verificationUrl: string | null = null;
        if (raw !== '') {
          // The admin CLI's rule: HTTPS, or http:// in sandbox mode; no private addresses outside it.
          const checked = checkCallbackUrl(raw, verificationUrlRules(config.sandbox));
          if (checked.problem !== undefined) {
            return await collectionSettingsPage(
              session,
              {
                values: { verification_url: raw, accept_by_default: acceptByDefault ? 'true' : 'false' },
                errors: { verification_url: [checked.problem] },
              },
              400,
            );
          }
          verificationUrl = checked.url;
        }
        await updateCollectionSettings(sql, session, { verificationUrl, acceptByDefault });
        return redirect('/console/settings?done=settings-saved');
      },
      { action: 'administer', parse: 'none' },
    )
    .post(
      '/console/settings/test-verification',
      async ({ session }) => {
        const url = (await verificationSettingsOf(sql, session.organizationId))?.url;
        if (!url)
          return await collectionSettingsPage(
            session,
            { test: notice('Save a verification URL first.', 'error') },
            400,
          );
        const sample: VerificationRequest = {
          phonenumber: '+256772123456',
          amount: '1000.0000',
          currency_code: 'BXC',
          reference: 'Test verification from the web console',
          remote_transaction_id: `TEST-${randomBytes(6).toString('hex').toUpperCase()}`,
        };
        const timeoutMs = Math.min(TEST_VERIFICATION_MAX_SECONDS, config.collections.verificationTimeoutSeconds) * 1000;
        const sent = await postVerification(
          url,
          sample,
          outgoingTransport({ sandbox: config.sandbox, caFile: config.webhooks.caFile, timeoutMs }),
        );
        return await collectionSettingsPage(session, { test: verificationResult(sample, url, sent) });
      },
      { action: 'administer', parse: 'none' },
    )
    .get('/console/settings/keys', ({ request, session }) => keyList({ request, session }, { done: doneOf(request) }), {
      page: 'integrate',
    })
    .post(
      '/console/settings/keys',
      async ({ request, session, form }) => {
        const role = text(form, 'role') === '' ? null : formRole(form, keyRolesFor(session.role));
        try {
          return await keyList({ request, session }, { created: (await issueKeyForUser(sql, session, role)).apiKey });
        } catch (error) {
          // Removed after this request's session was checked: the removal won, and no key was made.
          if (error instanceof KeyHolderRemoved)
            throw consoleError(403, 'Your user has been removed from the organization: no API key was made.');
          throw error;
        }
      },
      { action: 'integrate', parse: 'none' },
    )
    .post(
      '/console/settings/keys/:id/revoke',
      async ({ params, session }) => {
        const revoked = await revokeApiKey(sql, session, ownedId(params.id, 'ApiKey'));
        if (revoked === 'missing') throw consoleError(404, 'No such live API key in your organization.');
        if (revoked === 'forbidden')
          throw consoleError(403, "Only owners and admins revoke another user's API key; you may revoke your own.");
        return redirect('/console/settings/keys?done=key-revoked');
      },
      { action: 'integrate', parse: 'none' },
    )
    .get(
      '/console/settings/users',
      ({ request, session }) => userList({ request, session }, { done: doneOf(request) }),
      { page: 'administer' },
    )
    .post(
      '/console/settings/users',
      async ({ request, session, form }) => {
        const values = { email: text(form, 'email'), name: text(form, 'name'), role: text(form, 'role') };
        const role = formRole(form, assignableRoles(session));
        try {
          await createUser(sql, {
            organizationId: session.organizationId,
            audit: session.audit,
            email: values.email,
            name: values.name,
            password: text(form, 'password'),
            role,
          });
        } catch (error) {
          if (!(error instanceof UserInputError)) throw error;
          return await userList({ request, session }, { values, errors: { [error.field]: [error.message] } }, 400);
        }
        return redirect('/console/settings/users?done=user-created');
      },
      { action: 'administer', parse: 'none' },
    )
    .post(
      '/console/settings/users/:id/remove',
      async ({ params, session }) => {
        const user = await otherUser(session, params.id);
        return afterRoleChange(await removeUser(sql, session, user.id), 'user-removed');
      },
      { action: 'administer', parse: 'none' },
    )
    .post(
      '/console/settings/users/:id/role',
      async ({ params, session, form }) => {
        const user = await otherUser(session, params.id);
        return afterRoleChange(await setUserRole(sql, session, user.id, formRole(form, ROLES)), 'role-changed');
      },
      { action: 'administer', parse: 'none' },
    );
};
