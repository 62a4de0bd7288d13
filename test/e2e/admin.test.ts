import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { ROOT, awayFromWindowEdge, requester, testApp, testSql } from '../helpers';

function adminWith(env: Record<string, string>, ...args: string[]) {
  const result = spawnSync(process.execPath, ['src/admin.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const admin = (...args: string[]) => adminWith({}, ...args);

test('org create makes an organization, its owner and a working key', async () => {
  const result = admin('org', 'create', '--name', 'CLI Merchant', '--json');
  expect(result.status).toBe(0);
  const created = JSON.parse(result.stdout);
  expect(created.user.role).toBe('owner');
  expect(created.apiKey).toMatch(/^[0-9a-f]{40}$/);
  const [stored] = await testSql()<
    { digest: Uint8Array }[]
  >`select digest from api_keys where organization_id = ${created.organization.id}`;
  expect(Buffer.from(stored!.digest).toString('hex')).not.toContain(created.apiKey);
  const { app } = await testApp();
  expect((await requester(app, created.apiKey)('/api/contacts')).status).toBe(200);

  const second = JSON.parse(admin('key', 'create', '--org', String(created.organization.id), '--json').stdout);
  expect(second.apiKey).not.toBe(created.apiKey);
  expect((await requester(app, second.apiKey)('/api/events')).status).toBe(200);
});

test('wallet fund credits through a transaction; settings set stores collection settings', async () => {
  const created = JSON.parse(admin('org', 'create', '--name', 'Funded', '--json').stdout);
  const org = String(created.organization.id);
  const first = JSON.parse(
    admin('wallet', 'fund', '--org', org, '--currency', 'BXC', '--amount', '100.5', '--json').stdout,
  );
  const second = JSON.parse(
    admin('wallet', 'fund', '--org', org, '--currency', 'bxc', '--amount', '0.25', '--json').stdout,
  );
  expect(second.accountId).toBe(first.accountId);
  expect(second.balance).toBe('100.7500');
  const [sum] = await testSql()<
    { total: string }[]
  >`select sum(amount)::text as total from transactions where account_id = ${first.accountId}`;
  expect(sum?.total).toBe('100.7500');

  expect(
    admin(
      'settings',
      'set',
      '--org',
      org,
      '--verification-url',
      'https://merchant.example/verify',
      '--accept-by-default',
      'false',
    ).status,
  ).toBe(0);
  const [settings] =
    await testSql()`select verification_url, accept_by_default from organizations where id = ${created.organization.id}`;
  expect(settings).toEqual({ verification_url: 'https://merchant.example/verify', accept_by_default: false });
});

test("webhooks secret show/rotate and basic-auth set/clear manage the organization's delivery settings", async () => {
  const created = JSON.parse(admin('org', 'create', '--name', 'Hooks', '--json').stdout);
  const org = String(created.organization.id);
  const shown = JSON.parse(admin('webhooks', 'secret', 'show', '--org', org, '--json').stdout);
  expect(shown.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(JSON.parse(admin('webhooks', 'secret', 'show', '--org', org, '--json').stdout).signingSecret).toBe(
    shown.signingSecret,
  );
  const rotated = JSON.parse(admin('webhooks', 'secret', 'rotate', '--org', org, '--json').stdout);
  expect(rotated.signingSecret).not.toBe(shown.signingSecret);
  expect(new Date(rotated.previousSecretExpiresAt).getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);

  expect(admin('webhooks', 'basic-auth', 'set', '--org', org, '--username', 'acme', '--password', 'pw 1').status).toBe(
    0,
  );
  const [withCredentials] =
    await testSql()`select basic_username, basic_password from webhook_settings where organization_id = ${created.organization.id}`;
  expect(withCredentials).toEqual({ basic_username: 'acme', basic_password: 'pw 1' });
  const plain = admin('webhooks', 'secret', 'show', '--org', org);
  expect(plain.stdout).toContain('HTTP Basic credentials: set');
  expect(plain.stdout).not.toContain('pw 1');
  expect(admin('webhooks', 'basic-auth', 'clear', '--org', org).status).toBe(0);
  const [cleared] =
    await testSql()`select basic_username, basic_password from webhook_settings where organization_id = ${created.organization.id}`;
  expect(cleared).toEqual({ basic_username: null, basic_password: null });
  const missing = admin('webhooks', 'secret', 'show', '--org', '987654321');
  expect(missing.status).toBe(1);
  expect(missing.stderr).toContain('Organization 987654321 does not exist');
});

test.each([
  [['wallet', 'fund', '--org', '1', '--currency', 'EUR', '--amount', '5']],
  [['wallet', 'fund', '--org', '1', '--currency', 'BXC', '--amount', '1,000']],
  [['wallet', 'fund', '--org', '1', '--currency', 'BXC', '--amount', '-5']],
  [['org', 'create']],
  [['settings', 'set', '--org', '1', '--accept-by-default', 'maybe']],
  [['nonsense']],
  [['webhooks', 'basic-auth', 'set', '--org', '1', '--username', 'a:b', '--password', 'p']],
  [['webhooks', 'basic-auth', 'set', '--org', '1', '--username', 'a']],
  [['webhooks', 'secret', 'show']],
])('bad usage %p exits 2 with a message', (args) => {
  const result = admin(...args);
  expect(result.status).toBe(2);
  expect(result.stderr).toContain('usage: npm run admin');
});

test('throttle set gives an organization its own limits; default puts one back', async () => {
  const created = JSON.parse(admin('org', 'create', '--name', 'Throttled by CLI', '--json').stdout);
  const org = String(created.organization.id);
  const set = admin('throttle', 'set', '--org', org, '--reads', '1', '--writes', '7', '--json');
  expect(set.status).toBe(0);
  expect(JSON.parse(set.stdout)).toEqual({ id: created.organization.id, reads: 1, writes: 7 });
  const { app } = await testApp();
  const request = requester(app, created.apiKey);
  await awayFromWindowEdge(60, 5_000);
  expect((await request('/api/contacts')).status).toBe(200);
  expect((await request('/api/contacts')).status).toBe(429);
  expect(JSON.parse(admin('throttle', 'set', '--org', org, '--reads', 'default', '--json').stdout)).toEqual({
    id: created.organization.id,
    reads: null,
    writes: 7,
  });
  expect(admin('throttle', 'set', '--org', org, '--reads', '0').status).toBe(2);
  expect(admin('throttle', 'set', '--org', org).status).toBe(2);
});

test('version set saves the API version requests without one get', async () => {
  const created = JSON.parse(admin('org', 'create', '--name', 'Version by CLI', '--json').stdout);
  expect(admin('version', 'set', '--org', String(created.organization.id), '--version', 'v2').status).toBe(0);
  const { app } = await testApp();
  const response = await requester(app, created.apiKey)('/api/contacts');
  expect(response.headers.get('api-version')).toBe('v2');
  expect(admin('version', 'set', '--org', String(created.organization.id), '--version', 'v7').status).toBe(2);
});

test('user create makes a console user with a role who can sign in', async () => {
  const created = JSON.parse(admin('org', 'create', '--name', 'Console by CLI', '--json').stdout);
  const org = String(created.organization.id);
  const email = `cli-${Date.now()}@example.com`;
  const made = admin(
    'user',
    'create',
    '--org',
    org,
    '--email',
    email,
    '--password',
    'long enough password',
    '--role',
    'admin',
    '--json',
  );
  expect(made.status).toBe(0);
  expect(JSON.parse(made.stdout).user).toMatchObject({ organizationId: created.organization.id, email, role: 'admin' });
  const [stored] = await testSql()<
    { passwordHash: string }[]
  >`select password_hash as "passwordHash" from users where email = ${email}`;
  expect(stored!.passwordHash).toStartWith('$argon2id$');
  expect(await Bun.password.verify('long enough password', stored!.passwordHash)).toBe(true);
  const plain = admin(
    'user',
    'create',
    '--org',
    org,
    '--email',
    `member-${email}`,
    '--password',
    'long enough password',
  );
  expect(plain.stdout).toContain('role viewer');
  expect(
    admin(
      'user',
      'create',
      '--org',
      org,
      '--email',
      `boss-${email}`,
      '--password',
      'long enough password',
      '--role',
      'boss',
    ).status,
  ).toBe(2);

  expect(
    admin('user', 'create', '--org', org, '--email', email.toUpperCase(), '--password', 'long enough password').status,
  ).toBe(2);
  expect(admin('user', 'create', '--org', org, '--email', `short-${email}`, '--password', 'short').status).toBe(2);
  expect(
    admin('user', 'create', '--org', org, '--email', 'not-an-email', '--password', 'long enough password').status,
  ).toBe(2);
  expect(admin('user', 'create', '--org', org, '--password', 'long enough password').status).toBe(2);
});

test('user create refuses an email with an invisible character or mixed scripts, saying why', async () => {
  const created = JSON.parse(admin('org', 'create', '--name', 'Look-alike emails', '--json').stdout);
  const org = String(created.organization.id);
  const stamp = Date.now();
  const invisible = admin(
    'user',
    'create',
    '--org',
    org,
    '--email',
    `cli\u200b-${stamp}@example.com`,
    '--password',
    'long enough password',
  );
  expect(invisible.status).toBe(2);
  expect(invisible.stderr).toContain('--email: Enter the email address without invisible or control characters');
  const mixed = admin(
    'user',
    'create',
    '--org',
    org,
    '--email',
    `p\u0430ypal-${stamp}@example.com`,
    '--password',
    'long enough password',
  );
  expect(mixed.status).toBe(2);
  expect(mixed.stderr).toContain('mixes Latin and Cyrillic letters');
  const [{ count }] = await testSql()<
    [{ count: number }]
  >`select count(*)::int as count from users where organization_id = ${created.organization.id} and email like ${`%${stamp}@example.com`}`;
  expect(count).toBe(0);
  // Wholly in Cyrillic is one script: taken.
  expect(
    admin('user', 'create', '--org', org, '--email', `иван-${stamp}@example.com`, '--password', 'long enough password')
      .status,
  ).toBe(0);
});

describe('network in-doubt', () => {
  test('lists the operations in doubt with their route, state and why; nothing settled', async () => {
    const reference = `pay-doubt-${Date.now()}`;
    await testSql()`
      insert into network_operations
        (network, route, kind, reference, workflow_id, subject, phone_number, amount, state, fault, sent_at, sends)
      values
        ('MTN Uganda', 'momo', 'payout', ${reference}, 'payment-doubt', ${reference}, '+256772000001', 1000,
         'in_doubt', 'POST /disbursement/v1_0/transfer did not answer', now() - interval '30 seconds', 2)`;
    try {
      const listed = admin('network', 'in-doubt');
      expect(listed.status).toBe(0);
      const line = listed.stdout.split('\n').find((each) => each.includes(reference));
      expect(line).toContain('MTN Uganda');
      expect(line).toContain('momo');
      expect(line).toContain('in_doubt');
      expect(line).toContain('sent 2x: POST /disbursement/v1_0/transfer did not answer');
      const json = JSON.parse(admin('network', 'in-doubt', '--json').stdout) as {
        operations: { reference: string; state: string; sends: number }[];
      };
      expect(json.operations.find((operation) => operation.reference === reference)).toMatchObject({
        state: 'in_doubt',
        sends: 2,
      });
    } finally {
      await testSql()`delete from network_operations where reference = ${reference}`;
    }
  });
});

describe('network routes', () => {
  // MTN MoMo and pawaPay on, pawaPay as MTN Uganda's second route; no operator is called.
  const CONNECTED = {
    PUBLIC_BASE_URL: 'https://collections.example',
    MTN_MOMO_BASE_URL: 'http://127.0.0.1:9',
    MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'c-key',
    MTN_MOMO_COLLECTION_API_USER: 'c-user',
    MTN_MOMO_COLLECTION_API_KEY: 'c-api-key',
    MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'd-key',
    MTN_MOMO_DISBURSEMENT_API_USER: 'd-user',
    MTN_MOMO_DISBURSEMENT_API_KEY: 'd-api-key',
    PAWAPAY_BASE_URL: 'http://127.0.0.1:9',
    PAWAPAY_API_TOKEN: 'cli-token',
    PAWAPAY_PROVIDERS: 'MTN_MOMO_UGA',
    // Its own scope of the routes' health (the suite runs with NETWORK_ROUTES_SCOPE=task-queue), apart from other files'.
    NETWORK_ROUTES_SCOPE: 'task-queue',
    TASK_QUEUE: 'admin-network-routes',
  };
  const routes = (...args: string[]) => adminWith(CONNECTED, 'network', 'routes', ...args);
  type Line = {
    network: string;
    route: string;
    operation: string;
    order: number;
    operator: string;
    state: string;
    successRate: number | null;
  };
  const listed = (): Line[] => JSON.parse(routes('--json').stdout).routes;
  const forget = async () => {
    await testSql()`delete from network_routes where scope = 'admin-network-routes'`;
  };

  beforeAll(forget);
  afterAll(forget);

  test('with no connector on there are no routes', () => {
    expect(admin('network', 'routes').stdout).toContain('no routes: no operator connector is on');
    expect(JSON.parse(admin('network', 'routes', '--json').stdout)).toEqual({ routes: [] });
  });

  test('lists each route as the console does, and reorders, pauses and resumes them', async () => {
    expect(
      listed().map((line) => [line.operation, line.order, line.route, line.operator, line.state, line.successRate]),
    ).toEqual([
      ['collect', 1, 'momo', 'MTN MoMo', 'up', null],
      ['collect', 2, 'pawapay', 'pawaPay', 'up', null],
      ['payout', 1, 'momo', 'MTN MoMo', 'up', null],
      ['payout', 2, 'pawapay', 'pawaPay', 'up', null],
    ]);
    const ordered = routes('order', '--network', 'MTN Uganda', '--routes', 'pawapay,momo', '--operation', 'collect');
    expect(ordered.status).toBe(0);
    expect(ordered.stdout).toContain('MTN Uganda routes for collect, first to last: pawapay, momo');
    expect(listed().map((line) => `${line.operation} ${line.order} ${line.route}`)).toEqual([
      'collect 1 pawapay',
      'collect 2 momo',
      'payout 1 momo',
      'payout 2 pawapay',
    ]);

    expect(routes('pause', '--network', 'mtn uganda', '--route', 'MoMo', '--json').status).toBe(0);
    const paused = await testSql()<{ operation: string; paused: boolean }[]>`
      select operation, paused from network_routes where scope = 'admin-network-routes' and network = 'MTN Uganda' and route = 'momo' order by operation`;
    expect([...paused]).toEqual([
      { operation: 'collect', paused: true },
      { operation: 'payout', paused: true },
    ]);
    const text = routes().stdout.split('\n');
    expect(text.find((line) => /^MTN Uganda +payout +1 +MTN MoMo +paused +— of 0 +no fault$/.test(line))).toBeDefined();
    expect(routes('resume', '--network', 'MTN Uganda', '--route', 'momo', '--operation', 'payout').stdout).toContain(
      'MTN Uganda route momo resumed for payout',
    );
    expect(listed().map((line) => `${line.operation} ${line.route} ${line.state}`)).toEqual([
      'collect pawapay up',
      'collect momo paused',
      'payout momo up',
      'payout pawapay up',
    ]);
  });

  test.each([
    [
      ['order', '--network', 'Atlantis', '--routes', 'momo,pawapay'],
      '--network must name a network a connector that is on serves (MTN Uganda)',
    ],
    [['order', '--network', 'Airtel Uganda', '--routes', 'momo,pawapay'], '--network must name'],
    [
      ['order', '--network', 'MTN Uganda', '--routes', 'momo,mpesa'],
      'MTN Uganda has no route "mpesa": its routes are momo, pawapay',
    ],
    [['order', '--network', 'MTN Uganda', '--routes', 'momo'], '--routes names each route of MTN Uganda once'],
    [['order', '--network', 'MTN Uganda', '--routes', 'momo,momo'], '--routes names each route of MTN Uganda once'],
    [
      ['order', '--network', 'MTN Uganda', '--routes', 'momo,pawapay', '--operation', 'both'],
      '--operation takes collect or payout',
    ],
    [['pause', '--network', 'MTN Uganda'], "--route names one of the network's routes"],
    [['resume', '--network', 'MTN Uganda', '--route', 'airtel'], 'MTN Uganda has no route "airtel"'],
    [['pause', '--route', 'momo'], '--network must name'],
  ])('refuses %p with a usage error, changing nothing', async (args, message) => {
    const result = routes(...args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain('usage: npm run admin');
  });
});
