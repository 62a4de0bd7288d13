/**
 * Roles (src/domain/roles.ts): every API route and console page is tried with a key or a session of
 * every role; the roles a route names are let through, the others get 403 and nothing is written.
 * The tables in README and docs/roles.md are checked against the routes themselves.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT,
  createMerchant,
  requester,
  testApp,
  testSql,
  uniqueNumber,
  type Requester,
  type TestApp,
  type TestMerchant,
} from '../helpers';
import { ConsoleClient, PASSWORD, consoleUser } from '../console-helpers';
import { CAPABILITIES, ROLES, capabilitiesOf, type Role } from '../../src/domain/roles';
import type { UserId } from '../../src/domain/ids';
import { isConsolePath } from '../../src/console';
import { parameterRoles, routeRoles } from '../../src/api/openapi';
import { issueKeyForUser } from '../../src/services/merchants/api-keys';
import { storeIncomingPayment } from '../../src/services/collections/collection-receiving';

let ctx: TestApp;
let merchant: TestMerchant;
const keys = {} as Record<Role, Requester>;
const sessions = {} as Record<Role, ConsoleClient>;
const started: string[] = [];

const address = () => `198.51.100.${Math.floor(Math.random() * 250) + 1}-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  for (const role of ROLES) {
    const user = await consoleUser(merchant.organization.id, { role });
    keys[role] = requester(
      ctx.app,
      (await issueKeyForUser(testSql(), { organizationId: merchant.organization.id, userId: user.id })).apiKey,
    );
    sessions[role] = new ConsoleClient(ctx.app, { 'X-Forwarded-For': address() });
    expect((await sessions[role].signIn(user.email, PASSWORD)).status).toBe(303);
  }
});

afterAll(async () => {
  await Promise.all(
    started.map((id) =>
      ctx.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => {}),
    ),
  );
});

const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];
/** No object has this id: an allowed caller gets past the role check to a 404 or a 400, never a 403. */
const concrete = (path: string) => path.replace(/:[^/]+/g, '999999999');
const label = (route: { method: string; path: string }) => `${route.method} ${route.path}`;
const allRoutes = () =>
  ctx.app.routes.map((route) => ({
    method: route.method.toUpperCase(),
    path: route.path,
    roles: routeRoles(route),
    writers: parameterRoles(route),
  }));
/** Reads whose query asks them to write (a claim), each as its own route: the path with the flag set. */
const queryWrites = () =>
  apiRoutes().flatMap((route) =>
    Object.entries(route.writers).map(([flag, roles]) => ({
      method: route.method,
      path: `${route.path}?${flag}=True`,
      roles,
    })),
  );
const apiRoutes = () => allRoutes().filter((route) => route.path.startsWith('/api/') && route.roles.length > 0);
/** Console routes behind a session; signing out is left out here, since it ends the session the loop uses. */
const consoleRoutes = () =>
  allRoutes().filter(
    (route) => isConsolePath(route.path) && route.roles.length > 0 && route.path !== '/console/sign-out',
  );

describe('every route names its roles', () => {
  test("every /api route but the network's callbacks, and every console page but sign-in and the static files", () => {
    const open = allRoutes()
      .filter((route) => route.roles.length === 0)
      .map(label);
    for (const route of open) {
      expect({
        route,
        open:
          /^(GET|POST) \/api\/(network|operators)\/|^(GET|POST) \/console\/(sign-in|static\/)|^GET \/(healthz|readyz|metrics|docs|openapi)/.test(
            route,
          ) || !/^[A-Z]+ \/(api|console)\//.test(route),
      }).toEqual({ route, open: true });
    }
    expect(apiRoutes().length).toBeGreaterThanOrEqual(45);
    expect(consoleRoutes().length).toBeGreaterThanOrEqual(50);
  });
});

describe('every role against every API route', () => {
  test('a role the route does not name gets 403 before the body is read; one it names gets past the check', async () => {
    const tried: string[] = [];
    for (const route of apiRoutes()) {
      for (const role of ROLES) {
        const body = WRITES.includes(route.method) ? { form: { x: '1' } } : {};
        const answer = await keys[role](concrete(route.path), {
          method: route.method,
          headers: { 'Bills-date': new Date().toUTCString() },
          ...body,
        });
        const allowed = route.roles.includes(role);
        expect({
          route: label(route),
          role,
          status: allowed ? answer.status !== 403 && answer.status < 500 : answer.status,
        }).toEqual({ route: label(route), role, status: allowed ? true : 403 });
        tried.push(`${label(route)} ${role}`);
      }
    }
    expect(tried.length).toBe(apiRoutes().length * ROLES.length);
  });

  test("a read whose query asks it to write (a claim) is 403 to a role without the write's capability", async () => {
    expect(queryWrites().map(label)).toEqual(['GET /api/collections?claim=True']);
    for (const route of queryWrites()) {
      for (const role of ROLES) {
        const answer = await keys[role](concrete(route.path), { method: route.method });
        const allowed = route.roles.includes(role);
        // An allowed claim without its three parameters is a 400: past the role check.
        expect({
          route: label(route),
          role,
          status: allowed ? answer.status !== 403 && answer.status < 500 : answer.status,
        }).toEqual({ route: label(route), role, status: allowed ? true : 403 });
      }
    }
  });

  test("a viewer's key neither claims nor credits a collection, but still lists; a key with collect claims it", async () => {
    const unassigned = await storeIncomingPayment(testSql(), {
      network: 'MTN Uganda',
      remoteTransactionId: `ROLES-${randomBytes(5).toString('hex')}`,
      phoneNumber: uniqueNumber('+256772'),
      amount: '5',
      currency: 'BXC',
      reference: 'roles',
      paymentDate: new Date().toISOString(),
    });
    const claim = `/api/collections?claim=True&amount=5&remote_transaction_id=${unassigned.remoteTransactionId}&phonenumber=${encodeURIComponent(unassigned.phoneNumber)}`;
    const admin = await consoleUser(merchant.organization.id, { role: 'admin' });
    const adminsViewerKey = requester(
      ctx.app,
      (await issueKeyForUser(testSql(), { organizationId: merchant.organization.id, userId: admin.id }, 'viewer'))
        .apiKey,
    );
    for (const [who, viewer] of [
      ["a viewer's key", keys.viewer],
      ["an admin's key of role viewer", adminsViewerKey],
    ] as const) {
      // The last value of a repeated flag is the one the route reads: it decides the role check too.
      const query = claim.slice('/api/collections'.length);
      for (const path of [
        claim,
        `${claim}&claim=yes`,
        `/api/collections/${query}`,
        `/api/v4/collections${query}&claim=no&claim=1`,
      ]) {
        const answer = await viewer(path);
        expect({ who, path, status: answer.status, body: answer.body }).toEqual({
          who,
          path,
          status: 403,
          body: { detail: 'You do not have permission to perform this action.' },
        });
      }
      expect((await viewer(claim, { method: 'HEAD' })).status).toBe(403);
      expect({
        who,
        list: (await viewer('/api/collections')).status,
        notClaim: (await viewer(`${claim.replace('claim=True', 'claim=no')}`)).status,
      }).toEqual({ who, list: 200, notClaim: 200 });
    }
    const untouched = async () => ({
      collection: (
        await testSql()<{ organizationId: number | null; status: string }[]>`
        select organization_id as "organizationId", status from collections where id = ${unassigned.id}`
      )[0],
      credits: (
        await testSql()<
          { count: number }[]
        >`select count(*)::int as count from transactions where collection_id = ${unassigned.id}`
      )[0]!.count,
    });
    expect(await untouched()).toEqual({ collection: { organizationId: null, status: 'pending' }, credits: 0 });

    const claimed = await keys.developer(claim);
    expect({ status: claimed.status, ids: (claimed.body as { id: number }[]).map((row) => row.id) }).toEqual({
      status: 200,
      ids: [unassigned.id],
    });
    expect(await untouched()).toEqual({
      collection: { organizationId: merchant.organization.id, status: 'successful' },
      credits: 1,
    });
  });

  const creates: { path: string; body: () => Record<string, unknown>; table: string; roles: Role[] }[] = [
    {
      path: '/api/contacts',
      table: 'contacts',
      roles: ['owner', 'admin', 'developer', 'finance'],
      body: () => ({ phone_number: uniqueNumber('+256772'), first_name: 'Role', last_name: 'Test' }),
    },
    {
      path: '/api/collectionrequests',
      table: 'collection_requests',
      roles: ['owner', 'admin', 'developer', 'finance'],
      body: () => ({ phonenumber: uniqueNumber('+256772'), amount: '5', currency: 'BXC' }),
    },
    {
      path: '/api/payments',
      table: 'payments',
      roles: ['owner', 'admin', 'finance'],
      body: () => ({
        phonenumber: '+80000000001',
        amount: '1',
        currency: 'BXC',
        description: 'role test',
        start_date: '2099-01-01',
      }),
    },
    {
      path: '/api/payment-batches',
      table: 'payment_batches',
      roles: ['owner', 'admin', 'finance'],
      body: () => ({
        payments: [{ phonenumber: '+80000000001', amount: '1', currency: 'BXC', description: 'role test' }],
      }),
    },
    {
      path: '/api/webhooks',
      table: 'webhooks',
      roles: ['owner', 'admin', 'developer'],
      body: () => ({ event: 'contact.created', target: `https://roles.example/${randomBytes(4).toString('hex')}` }),
    },
  ];

  for (const create of creates) {
    test(`POST ${create.path} with a valid body: written for ${create.roles.join(', ')}, 403 and nothing written for the others`, async () => {
      const count = async () =>
        (
          await testSql()<
            [{ count: number }]
          >`select count(*)::int as count from ${testSql()(create.table)} where organization_id = ${merchant.organization.id}`
        )[0].count;
      for (const role of ROLES) {
        const before = await count();
        const answer = await keys[role](create.path, { body: create.body() });
        const allowed = create.roles.includes(role);
        expect({ role, status: answer.status }).toEqual({ role, status: allowed ? 201 : 403 });
        expect({ role, written: (await count()) - before }).toEqual({ role, written: allowed ? 1 : 0 });
        if (allowed && create.path === '/api/collectionrequests') started.push(`collection-request-${answer.body.id}`);
      }
    });
  }
});

describe('every role against every console page and form', () => {
  test('a page or form the role may not use is a 403 page; the others get past the check', async () => {
    let tried = 0;
    for (const route of consoleRoutes()) {
      for (const role of ROLES) {
        const browser = sessions[role];
        await browser.get('/console');
        const answer =
          route.method === 'GET'
            ? await browser.get(concrete(route.path))
            : await browser.post(concrete(route.path), {});
        const allowed = route.roles.includes(role);
        expect({
          route: label(route),
          role,
          status: allowed ? answer.status !== 403 && answer.status < 500 : answer.status,
        }).toEqual({ route: label(route), role, status: allowed ? true : 403 });
        tried += 1;
      }
    }
    expect(tried).toBe(consoleRoutes().length * ROLES.length);
  });

  test('the navigation shows each role only the sections it may open', async () => {
    const navigation = async (role: Role) => (await sessions[role].get('/console')).text;
    expect(await navigation('viewer')).not.toContain('href="/console/webhooks"');
    expect(await navigation('finance')).not.toContain('href="/console/settings');
    expect(await navigation('developer')).toContain('href="/console/settings/keys">Settings');
    expect(await navigation('admin')).toContain('href="/console/settings">Settings');
    for (const [role, shown] of [
      ['viewer', false],
      ['developer', false],
      ['finance', true],
    ] as const) {
      const payments = (await sessions[role].get('/console/payments')).text;
      expect({ role, newPayment: payments.includes('href="/console/payments/new"') }).toEqual({
        role,
        newPayment: shown,
      });
    }
  });
});

describe('keys, users and owners', () => {
  test("a key narrower than its user does only what its role allows; a user's new role narrows their keys at once", async () => {
    const admin = await consoleUser(merchant.organization.id, { role: 'admin' });
    const viewerKey = requester(
      ctx.app,
      (await issueKeyForUser(testSql(), { organizationId: merchant.organization.id, userId: admin.id }, 'viewer'))
        .apiKey,
    );
    const ownKey = requester(
      ctx.app,
      (await issueKeyForUser(testSql(), { organizationId: merchant.organization.id, userId: admin.id })).apiKey,
    );
    const contact = () => ({ phone_number: uniqueNumber('+256772'), first_name: 'Key', last_name: 'Role' });
    expect((await viewerKey('/api/contacts', { body: contact() })).status).toBe(403);
    expect((await viewerKey('/api/contacts')).status).toBe(200);
    expect((await ownKey('/api/contacts', { body: contact() })).status).toBe(201);

    await sessions.owner.get('/console/settings/users');
    expect((await sessions.owner.post(`/console/settings/users/${admin.id}/role`, { role: 'viewer' })).status).toBe(
      303,
    );
    expect((await ownKey('/api/contacts', { body: contact() })).status).toBe(403);
    expect((await ownKey('/api/webhooks')).status).toBe(403);
  });

  test('a key may not be given a role that could do more than its user', async () => {
    const developer = sessions.developer;
    await developer.get('/console/settings/keys');
    const csrf = developer.csrf();
    // A viewer reads statements, which a developer does not.
    for (const role of ['finance', 'owner', 'viewer', 'chief']) {
      expect({ role, status: (await developer.post('/console/settings/keys', { role }, { csrf })).status }).toEqual({
        role,
        status: 400,
      });
    }
    const made = await developer.post('/console/settings/keys', { role: 'developer' }, { csrf });
    expect(made.status).toBe(200);
    const key = /id="new-api-key">([0-9a-f]{40})</.exec(made.text)?.[1];
    expect(
      (
        await requester(ctx.app, key!)('/api/payments', {
          body: { phonenumber: '+80000000001', amount: '1', currency: 'BXC' },
        })
      ).status,
    ).toBe(403);
    expect((await requester(ctx.app, key!)('/api/webhooks')).status).toBe(200);
  });

  test("an admin's key is never labelled owner; an owner's may be", async () => {
    for (const role of ['admin', 'owner'] as const) {
      const browser = sessions[role];
      const page = await browser.get('/console/settings/keys');
      expect({ role, offersOwner: page.text.includes('value="owner"') }).toEqual({
        role,
        offersOwner: role === 'owner',
      });
      const made = await browser.post('/console/settings/keys', { role: 'owner' }, { csrf: browser.csrf() });
      expect({ role, status: made.status }).toEqual({ role, status: role === 'owner' ? 200 : 400 });
    }
  });

  test("another user's key is revoked by owners and admins only; anyone revokes their own", async () => {
    const { organization } = await createMerchant(ctx.app);
    const people = {} as Record<Role, { id: UserId; email: string }>;
    for (const role of ROLES) people[role] = await consoleUser(organization.id, { role });
    const keyOf = async (role: Role) => {
      const issued = await issueKeyForUser(testSql(), { organizationId: organization.id, userId: people[role].id });
      return {
        id: issued.id,
        works: async () => (await requester(ctx.app, issued.apiKey)('/api/events')).status === 200,
      };
    };
    const sessionOf = async (role: Role) => {
      const browser = new ConsoleClient(ctx.app, { 'X-Forwarded-For': address() });
      expect((await browser.signIn(people[role].email, PASSWORD)).status).toBe(303);
      const page = await browser.get('/console/settings/keys');
      const csrf = browser.csrf();
      return {
        page: page.text,
        revoke: async (id: number) => (await browser.post(`/console/settings/keys/${id}/revoke`, {}, { csrf })).status,
      };
    };
    const ownerKey = await keyOf('owner');
    const developer = await sessionOf('developer');
    // The owner's key shows no revoke button to a developer, and a forged form is refused.
    expect(developer.page).not.toContain(`/console/settings/keys/${ownerKey.id}/revoke`);
    expect(await developer.revoke(ownerKey.id)).toBe(403);
    expect(await ownerKey.works()).toBe(true);
    // Concurrent forged revocations by a developer of every other user's key: none lands.
    const others = await Promise.all((['owner', 'admin', 'finance', 'viewer'] as const).map(keyOf));
    expect(await Promise.all(others.map((key) => developer.revoke(key.id)))).toEqual([403, 403, 403, 403]);
    expect(await Promise.all(others.map((key) => key.works()))).toEqual([true, true, true, true]);
    const developerKey = await keyOf('developer');
    expect(await developer.revoke(developerKey.id)).toBe(303);
    expect(await developerKey.works()).toBe(false);
    const admin = await sessionOf('admin');
    expect(admin.page).toContain(`/console/settings/keys/${ownerKey.id}/revoke`);
    expect(await admin.revoke(ownerKey.id)).toBe(303);
    expect(await ownerKey.works()).toBe(false);
  });

  test('only an owner touches the owner role, and the organization always keeps an owner', async () => {
    const { organization } = await createMerchant(ctx.app);
    const [first] = await testSql()<
      { id: number }[]
    >`select id from users where organization_id = ${organization.id} order by id limit 1`;
    const owner = await consoleUser(organization.id, { role: 'owner' });
    const admin = await consoleUser(organization.id, { role: 'admin' });
    const finance = await consoleUser(organization.id, { role: 'finance' });
    const signedIn = async (user: { email: string }) => {
      const browser = new ConsoleClient(ctx.app, { 'X-Forwarded-For': address() });
      expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
      await browser.get('/console/settings/users');
      const csrf = browser.csrf();
      return { post: (path: string, form: Record<string, string> = {}) => browser.post(path, form, { csrf }) };
    };
    const asAdmin = await signedIn(admin);
    expect((await asAdmin.post(`/console/settings/users/${finance.id}/role`, { role: 'owner' })).status).toBe(403);
    expect((await asAdmin.post(`/console/settings/users/${owner.id}/role`, { role: 'viewer' })).status).toBe(403);
    expect((await asAdmin.post(`/console/settings/users/${owner.id}/remove`)).status).toBe(403);
    expect((await asAdmin.post(`/console/settings/users/${finance.id}/role`, { role: 'developer' })).status).toBe(303);
    expect((await asAdmin.post(`/console/settings/users/${finance.id}/role`, { role: 'chief' })).status).toBe(400);

    const asOwner = await signedIn(owner);
    expect((await asOwner.post(`/console/settings/users/${first!.id}/role`, { role: 'admin' })).status).toBe(303);
    expect((await asOwner.post(`/console/settings/users/${owner.id}/role`, { role: 'admin' })).status).toBe(400);
    const owners = await testSql()<
      { id: number }[]
    >`select id from users where organization_id = ${organization.id} and role = 'owner' and removed_at is null`;
    expect(owners.map((row) => row.id)).toEqual([owner.id]);
  });

  test('two owners demoting each other at once leave one owner', async () => {
    const { organization } = await createMerchant(ctx.app);
    await testSql()`update users set role = 'admin' where organization_id = ${organization.id}`;
    const a = await consoleUser(organization.id, { role: 'owner' });
    const b = await consoleUser(organization.id, { role: 'owner' });
    const browsers = await Promise.all(
      [a, b].map(async (user) => {
        const browser = new ConsoleClient(ctx.app, { 'X-Forwarded-For': address() });
        expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
        await browser.get('/console/settings/users');
        return browser;
      }),
    );
    const answers = await Promise.all([
      browsers[0]!.post(`/console/settings/users/${b.id}/role`, { role: 'admin' }),
      browsers[1]!.post(`/console/settings/users/${a.id}/role`, { role: 'admin' }),
    ]);
    // The second to take the lock is no longer an owner by then.
    expect(answers.map((answer) => answer.status).sort()).toEqual([303, 403]);
    const owners = await testSql()<
      { id: number }[]
    >`select id from users where organization_id = ${organization.id} and role = 'owner' and removed_at is null`;
    expect(owners).toHaveLength(1);
  });
});

describe('the tables in README and docs/roles.md', () => {
  const section = (file: string, name: string) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const match = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(text);
    if (!match) throw new Error(`${file} has no ${name} section`);
    return match[1];
  };

  test("README's table of roles and capabilities is the one the code grants", () => {
    const lines = [
      `| Role | ${CAPABILITIES.join(' | ')} |`,
      `|---|${CAPABILITIES.map(() => '---').join('|')}|`,
      ...ROLES.map(
        (role) =>
          `| ${role} | ${CAPABILITIES.map((capability) => (capabilitiesOf(role).includes(capability) ? 'yes' : '')).join(' | ')} |`,
      ),
    ];
    expect(section('README.md', 'roles')).toBe(`${lines.join('\n')}\n`);
  });

  test('docs/roles.md lists every route and page with the roles it lets through', () => {
    const row = (route: { method: string; path: string; roles: Role[] }) =>
      `| ${route.method} | \`${route.path}\` | ${route.roles.join(', ')} |`;
    const rows = [
      ...apiRoutes(),
      ...allRoutes().filter((route) => isConsolePath(route.path) && route.roles.length > 0),
    ].flatMap((route) => [
      row(route),
      ...queryWrites()
        .filter((write) => write.path.startsWith(`${route.path}?`) && write.method === route.method)
        .map(row),
    ]);
    expect(section('docs/roles.md', 'routes')).toBe(`| Method | Path | Roles |\n|---|---|---|\n${rows.join('\n')}\n`);
  });
});
