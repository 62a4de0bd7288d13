/**
 * The web console in a real browser: Debian's Chromium driven by playwright-core, against the real
 * API process (Bun) and the real worker process (Node), a local HTTPS webhook receiver and a local
 * HTTP verification URL. Every page visited must log no console error; the overview, a request's
 * timeline, a webhook's deliveries and a payment's page are photographed for the README
 * (`npm run screenshots` writes them into docs/screenshots).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { createOrganization, fundWallet } from '../../src/services/merchants/organizations';
import { createUser } from '../../src/services/merchants/users';
import type { OrganizationId } from '../../src/domain/ids';
import {
  ROOT,
  eventually,
  startWorker,
  testClient,
  testSql,
  uniqueNumber,
  uniqueTaskQueue,
  type WorkerProcess,
} from '../helpers';
import { launchBrowser, screenshotPath } from '../browser';
import { makeCertificate, startReceiver, type Receiver } from '../webhook-receiver';

const PASSWORD = 'console browser test';
const taskQueue = uniqueTaskQueue('console');

let api: ChildProcess;
let apiOutput = '';
let worker: WorkerProcess;
let baseUrl: string;
let receiver: Receiver;
let verificationServer: Server;
let verificationUrl: string;
const verificationRequests: Record<string, string>[] = [];
let browser: BrowserContext;
let page: Page;
let organizationId: OrganizationId;
const manager = { email: `manager-${Date.now()}@browser.test` };
const member = { email: `member-${Date.now()}@browser.test` };
/** Console errors and page errors of every page visited by the manager's browser. */
const consoleErrors: string[] = [];
/** The numbers money is asked from and sent to: this run's own, so no other test's requests or payments share them. */
const customer = uniqueNumber('+256772');
const supplier = uniqueNumber('+256772');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A merchant's verification URL: answers `ACCEPT <remote_transaction_id>` to every request. */
async function startVerificationServer(): Promise<void> {
  verificationServer = createHttpServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const parsed = JSON.parse(body) as Record<string, string>;
      verificationRequests.push(parsed);
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`ACCEPT ${parsed.remote_transaction_id}`);
    });
  });
  await new Promise<void>((resolve) => verificationServer.listen(0, '127.0.0.1', resolve));
  verificationUrl = `http://127.0.0.1:${(verificationServer.address() as AddressInfo).port}/verify`;
}

/** Records every console error and uncaught page error of `target`, with the page it happened on. */
function watchErrors(target: Page, into: string[]): void {
  target.on('console', (message) => {
    if (message.type() === 'error') into.push(`${target.url()}: ${message.text()}`);
  });
  target.on('pageerror', (error) => into.push(`${target.url()}: ${error.message}`));
}

async function signIn(target: Page, email: string): Promise<void> {
  await target.goto(`${baseUrl}/console`);
  await expect(target.url()).toContain('/console/sign-in');
  await target.getByLabel('Email').fill(email);
  await target.getByLabel('Password').fill(PASSWORD);
  await target.getByRole('button', { name: 'Sign in' }).click();
  await target.waitForURL(`${baseUrl}/console`);
}

/** Reloads `target` until `check` holds (pages without a live region show news on reload). */
async function reloadUntil(
  target: Page,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  await eventually(
    what,
    async () => {
      if (await check()) return true;
      await target.reload();
      return false;
    },
    timeoutMs,
  );
}

/** Creates a contact through the console's form (a `contact.created` event) and waits for its page. */
async function createContactInConsole(firstName: string, lastName: string, phoneNumber: string): Promise<void> {
  await page.goto(`${baseUrl}/console/contacts/new`);
  await page.getByLabel('First name').fill(firstName);
  await page.getByLabel('Last name').fill(lastName);
  await page.getByLabel('Phone number').fill(phoneNumber);
  await page.getByRole('button', { name: 'Create contact' }).click();
  await page.waitForURL(/\/console\/contacts\/\d+/);
}

beforeAll(async () => {
  const certificate = makeCertificate();
  receiver = await startReceiver(certificate);
  await startVerificationServer();
  const sql = testSql();
  const created = await createOrganization(sql, 'Browser Test Shop');
  organizationId = created.organization.id;
  await fundWallet(sql, organizationId, 'BXC', '250000');
  await createUser(sql, { organizationId, email: manager.email, password: PASSWORD, role: 'admin', name: 'Manager' });
  await createUser(sql, { organizationId, email: member.email, password: PASSWORD, role: 'finance', name: 'Member' });

  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: String(port),
    TASK_QUEUE: taskQueue,
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    // Payouts (payments, reversals) complete a second after they are sent, and are asked about every second.
    SANDBOX_PAYOUT_DELAY_SECONDS: '1',
    PAYOUT_STATUS_POLL_SECONDS: '1',
    WEBHOOK_CA_FILE: certificate.certFile,
    // The first delivery's second attempt is far away: it stays failing until a redelivery.
    WEBHOOK_RETRY_SCHEDULE: '1h,1h,1h,1h,1h,1h,1h,1h,1h',
  };
  api = spawn(process.execPath, ['src/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  api.stdout?.on('data', (chunk: Buffer) => (apiOutput += chunk.toString()));
  api.stderr?.on('data', (chunk: Buffer) => (apiOutput += chunk.toString()));
  worker = await startWorker(taskQueue, {
    SANDBOX_PAYMENT_DELAY_SECONDS: '1',
    SANDBOX_PAYOUT_DELAY_SECONDS: '1',
    PAYOUT_STATUS_POLL_SECONDS: '1',
    WEBHOOK_CA_FILE: certificate.certFile,
    WEBHOOK_RETRY_SCHEDULE: env.WEBHOOK_RETRY_SCHEDULE!,
  });
  await eventually(
    'the API to answer',
    async () => (await fetch(`${baseUrl}/healthz`).catch(() => null))?.status === 200,
    30_000,
  );
  browser = await launchBrowser({ width: 1200, height: 900 });
  page = browser.pages()[0] ?? (await browser.newPage());
  watchErrors(page, consoleErrors);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  // Deliveries left waiting on their hour-long retry timers: end them with the test.
  const client = await testClient();
  for await (const execution of client.workflow.list({
    query: `OrganizationId = "${organizationId}" AND ExecutionStatus = "Running"`,
  })) {
    await client.workflow
      .getHandle(execution.workflowId)
      .terminate('browser test over')
      .catch(() => {});
  }
  api?.kill('SIGTERM');
  await worker?.stop();
  await receiver?.close();
  verificationServer?.close();
});

test('sign in', async () => {
  await signIn(page, manager.email);
  expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
  expect(await page.getByText('Browser Test Shop').first().isVisible()).toBe(true);
});

test('create a collection request and watch it turn successful', async () => {
  await page.goto(`${baseUrl}/console/requests/new`);
  await page.getByLabel('Phone number').fill(customer);
  await page.getByLabel('Amount').fill('1500');
  await page.getByLabel('Currency').selectOption('BXC');
  await page.getByLabel('Customer first name').fill('Jane');
  await page.getByLabel('Customer last name').fill('Nakato');
  await page.getByRole('button', { name: 'Create request' }).click();
  await page.waitForURL(/\/console\/requests\/\d+$/);
  // No reload: the live region refreshes itself until the request is final.
  await page.locator('#request-status').getByText('successful').waitFor({ timeout: 60_000 });
  const timeline = await page.locator('ol.timeline').textContent();
  expect(timeline).toContain('processing started');
  expect(timeline).toContain('successful');
  expect(
    await page.getByRole('link', { name: /collection-request-\d+ in the Temporal UI/ }).getAttribute('href'),
  ).toMatch(/^http:\/\/localhost:8233\/namespaces\/default\/workflows\/collection-request-\d+$/);
  await page.screenshot({ path: screenshotPath('request-timeline.png'), fullPage: true });
}, 90_000);

test("find a failing webhook's attempts, redeliver, send a test event", async () => {
  receiver.script('/hooks/orders', [{ status: 500, body: 'receiver is down for maintenance' }], {
    status: 200,
    body: 'ok',
  });
  await page.goto(`${baseUrl}/console/webhooks`);
  await page.getByLabel('Event').selectOption('contact.created');
  await page.getByLabel('Target URL').fill(receiver.url('/hooks/orders'));
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.waitForURL(/\/console\/webhooks\/\d+\?done=webhook-created$/);
  const webhookPage = page.url().replace(/\?.*$/, '');

  await createContactInConsole('Moses', 'Okello', '+256701234567');
  expect(await page.getByText('Moses Okello').first().isVisible()).toBe(true);

  await page.goto(webhookPage);
  const firstDelivery = page.locator('section.delivery').first();
  await reloadUntil(page, 'the failed attempt', async () => (await firstDelivery.locator('tbody tr').count()) > 0);
  const attempt = await firstDelivery.locator('tbody tr').first().textContent();
  expect(attempt).toContain('500');
  expect(attempt).toContain('receiver is down for maintenance');
  expect(attempt).toMatch(/\d+ ms/);

  await firstDelivery.getByRole('button', { name: 'Redeliver this event' }).click();
  await page.waitForURL(/done=redelivery-started/);
  await reloadUntil(
    page,
    'the redelivery to be delivered',
    async () =>
      (await page.locator('section.delivery', { hasText: 'redelivery' }).first().textContent())?.includes(
        'delivered',
      ) ?? false,
  );
  const redelivery = await page.locator('section.delivery', { hasText: 'redelivery' }).first().textContent();
  expect(redelivery).toContain('200');
  expect(redelivery).toContain('ok');
  expect(receiver.requests('/hooks/orders').length).toBe(2);
  await page.screenshot({ path: screenshotPath('webhook-deliveries.png'), fullPage: true });

  await page.getByRole('button', { name: 'Send a test event' }).click();
  await page.getByText(/Test event sent to .* answered 200/).waitFor();
  const test = receiver.requests('/hooks/orders').at(-1)!;
  expect(JSON.parse(test.body).data.test).toBe(true);
  expect(test.headers['webhook-signature']).toMatch(/^v1,/);
});

test('delete a webhook', async () => {
  await page.goto(`${baseUrl}/console/webhooks`);
  await page.getByLabel('Event').selectOption('collection.received');
  await page.getByLabel('Target URL').fill(receiver.url('/hooks/to-delete'));
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.waitForURL(/\/console\/webhooks\/\d+/);
  const id = Number(/\/console\/webhooks\/(\d+)/.exec(page.url())?.[1]);
  await page.getByRole('link', { name: 'Delete webhook' }).click();
  await page.getByRole('button', { name: 'Delete webhook' }).click();
  await page.waitForURL(/done=webhook-deleted/);
  expect(await page.getByText('Webhook deleted.').isVisible()).toBe(true);
  expect(await page.locator(`a[href="/console/webhooks/${id}"]`).count()).toBe(0);
  const [row] = await testSql()<
    { deletedAt: Date | null }[]
  >`select deleted_at as "deletedAt" from webhooks where id = ${id}`;
  expect(row?.deletedAt).toBeInstanceOf(Date);
});

test('disable a webhook, see the warning, enable it and recover the events it missed', async () => {
  await page.goto(`${baseUrl}/console/webhooks`);
  await page.getByLabel('Event').selectOption('contact.created');
  await page.getByLabel('Target URL').fill(receiver.url('/hooks/recovered'));
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.waitForURL(/\/console\/webhooks\/\d+\?done=webhook-created$/);
  const id = Number(/\/console\/webhooks\/(\d+)/.exec(page.url())?.[1]);
  const webhookPage = `${baseUrl}/console/webhooks/${id}`;
  await page.getByRole('button', { name: 'Disable webhook' }).click();
  await page.waitForURL(/done=webhook-disabled/);
  expect(await page.getByRole('alert').filter({ hasText: 'This webhook is disabled' }).isVisible()).toBe(true);

  // The start of the recovery below, a minute back and whole (the form takes no seconds): the events
  // counted after it must be those of the very period the console recovers.
  const aMinuteAgo = (await testSql()<{ now: Date }[]>`select now() - interval '1 minute' as now`)[0]!.now;
  const since = new Date(Math.floor(aMinuteAgo.getTime() / 60_000) * 60_000);
  // While it is disabled, a contact's event is not delivered to it; the overview says so.
  await createContactInConsole('Grace', 'Atim', '+256701234599');
  await page.goto(`${baseUrl}/console`);
  const warning = page.getByRole('alert').filter({ hasText: 'A webhook is disabled' });
  expect(await warning.textContent()).toContain('/hooks/recovered');
  await warning.getByRole('link', { name: `#${id}` }).click();
  await page.waitForURL(webhookPage);

  await page.getByRole('button', { name: 'Enable webhook' }).click();
  await page.waitForURL(/done=webhook-enabled/);
  expect(receiver.requests('/hooks/recovered')).toHaveLength(0);
  // datetime-local takes `YYYY-MM-DDTHH:MM`; the console reads it as UTC.
  await page.getByLabel('Since (UTC)').fill(since.toISOString().slice(0, 16));
  await page.getByRole('button', { name: 'Redeliver events' }).click();
  await page.waitForURL(/done=recovery-started/);
  const recoveries = page.locator('section[aria-labelledby="recover"]');
  await reloadUntil(
    page,
    'the recovery to finish',
    async () => (await recoveries.textContent())?.includes('finished') ?? false,
  );
  // Every contact.created event of the period: the one it missed while disabled among them.
  const { count } = (
    await testSql()<{ count: number }[]>`
    select count(*)::int as count from events where organization_id = ${organizationId} and type = 'contact.created' and created >= ${since}`
  )[0]!;
  expect(await recoveries.textContent()).toContain(`${count} of ${count}`);
  expect(await recoveries.locator('progress').getAttribute('value')).toBe(String(count));
  const received = receiver.requests('/hooks/recovered').map((request) => JSON.parse(request.body).data.first_name);
  expect(received).toContain('Grace');
  expect(received).toHaveLength(count);
  await page.screenshot({ path: screenshotPath('webhook-recovery.png'), fullPage: true });

  // A period that ends before it starts is shown next to its field (a 400 page, so on a page of its own: the
  // browser logs a 400 as an error, which the manager's page must not have), nothing is recorded.
  const other = await browser.newPage();
  await other.goto(webhookPage);
  await other.getByLabel('Since (UTC)').fill('2025-05-02T00:00');
  await other.getByLabel('Until (UTC)').fill('2025-05-01T00:00');
  await other.getByRole('button', { name: 'Redeliver events' }).click();
  expect(await other.locator('#error-since').textContent()).toContain('Must be before until');
  await other.close();
  const [recorded] = await testSql()<
    { recoveries: number }[]
  >`select count(*)::int as recoveries from webhook_recoveries where webhook_id = ${id}`;
  expect(recorded!.recoveries).toBe(1);
});

test('set the verification URL and see a test verification answered', async () => {
  await page.goto(`${baseUrl}/console/settings`);
  await page.getByLabel('Verification URL').fill(verificationUrl);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(/done=settings-saved/);
  await page.getByRole('button', { name: 'Send a test verification' }).click();
  const answer = await page.locator('#verification-answer').textContent();
  expect(answer).toMatch(/^ACCEPT TEST-[0-9A-F]{12}$/);
  expect(await page.getByText('This answer accepts the payment.').isVisible()).toBe(true);
  expect(verificationRequests.at(-1)).toMatchObject({
    currency_code: 'BXC',
    remote_transaction_id: answer!.slice('ACCEPT '.length),
  });
});

test('create and revoke an API key: the revoked key gets 401 on the API', async () => {
  await page.goto(`${baseUrl}/console/settings/keys`);
  await page.getByRole('button', { name: 'Create API key' }).click();
  const key = (await page.locator('#new-api-key').textContent())!;
  expect(key).toMatch(/^[0-9a-f]{40}$/);
  const call = () => fetch(`${baseUrl}/api/events`, { headers: { Authorization: `Token ${key}` } });
  expect((await call()).status).toBe(200);
  await page.goto(`${baseUrl}/console/settings/keys`);
  await page
    .locator('tr', { hasText: key.slice(0, 12) })
    .getByRole('button', { name: 'Revoke' })
    .click();
  await page.waitForURL(/done=key-revoked/);
  const revoked = await call();
  expect(revoked.status).toBe(401);
  expect(await revoked.json()).toEqual({ detail: 'Invalid token.' });
});

test('a user without the permission cannot open settings, and a forged POST without the CSRF token is refused', async () => {
  const memberContext = await launchBrowser({ width: 1200, height: 900 });
  const memberErrors: string[] = [];
  try {
    const memberPage = memberContext.pages()[0] ?? (await memberContext.newPage());
    watchErrors(memberPage, memberErrors);
    await signIn(memberPage, member.email);
    expect(await memberPage.getByRole('link', { name: 'Settings' }).count()).toBe(0);
    const settings = await memberPage.goto(`${baseUrl}/console/settings`);
    expect(settings?.status()).toBe(403);
    expect(await memberPage.getByText('You do not have permission to open this page.').isVisible()).toBe(true);
    // A POST with the member's session cookie but without the form's token, as another site would send it.
    const forged = await memberContext.request.post(`${baseUrl}/console/contacts`, {
      form: { first_name: 'Forged', last_name: 'Request', phone_number: '+256772000999' },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    const [{ count }] = await testSql()<
      [{ count: number }]
    >`select count(*)::int as count from contacts where first_name = 'Forged' and organization_id = ${organizationId}`;
    expect(count).toBe(0);
  } finally {
    await memberContext.close();
  }
  // Chromium reports the 403 document itself as a failed resource; nothing else may appear.
  expect(memberErrors.filter((error) => !error.includes('status of 403'))).toEqual([]);
});

test('a contact named <script>alert(1)</script> renders as text', async () => {
  let dialogs = 0;
  page.on('dialog', (dialog) => {
    dialogs += 1;
    void dialog.dismiss();
  });
  await createContactInConsole('<script>alert(1)</script>', '<img src=x onerror=alert(2)>', '+256772000777');
  expect(await page.getByText('<script>alert(1)</script> <img src=x onerror=alert(2)>').first().isVisible()).toBe(true);
  await page.goto(`${baseUrl}/console/contacts`);
  expect(await page.getByText('<script>alert(1)</script>', { exact: false }).first().isVisible()).toBe(true);
  await page.goto(`${baseUrl}/console/events?type=contact.created`);
  await page
    .getByRole('link', { name: /^#\d+$/ })
    .first()
    .click();
  expect(await page.locator('pre.json').textContent()).toContain('"first_name": "<script>alert(1)</script>"');
  expect(dialogs).toBe(0);
});

test('send a payment and watch it turn completed', async () => {
  await page.goto(`${baseUrl}/console`);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Payments' }).click();
  await page.getByRole('link', { name: 'New payment' }).click();
  await page.getByLabel('Recipient phone number').fill(supplier);
  await page.getByLabel('Amount').fill('2500');
  await page.getByLabel('Currency').selectOption('BXC');
  await page.getByLabel('Description').fill('Supplier refund A-17');
  await page.getByLabel('Recipient first name').fill('Jane');
  await page.getByLabel('Recipient last name').fill('Nakato');
  await page.getByRole('button', { name: 'Send payment' }).click();
  await page.waitForURL(/\/console\/payments\/\d+\?done=payment-created$/);
  const id = Number(/\/console\/payments\/(\d+)/.exec(page.url())?.[1]);
  // No reload: the live region refreshes itself until the payment is final.
  await page.locator('#payment-state').getByText('completed').waitFor({ timeout: 60_000 });
  const timeline = await page.locator('ol.timeline').textContent();
  expect(timeline).toMatch(/new[\s\S]*processing[\s\S]*completed/);
  expect(await page.locator('#live table').textContent()).toContain('-2,500 BXC');
  expect(await page.getByRole('link', { name: `payment-${id} in the Temporal UI` }).getAttribute('href')).toBe(
    `http://localhost:8233/namespaces/default/workflows/payment-${id}`,
  );
  // The cancel form drawn with the page went away when the payment left `new`.
  expect(await page.getByRole('heading', { name: 'Cancel this payment' }).isVisible()).toBe(false);
  await page.goto(`${baseUrl}/console/payments/${id}`);
  expect(await page.getByText('Supplier refund A-17').isVisible()).toBe(true);
  await page.screenshot({ path: screenshotPath('payment.png'), fullPage: true });
  await page.goto(`${baseUrl}/console/payments?state=completed`);
  expect(await page.locator(`a[href="/console/payments/${id}"]`).count()).toBe(1);
}, 90_000);

test('cancel a scheduled payment', async () => {
  await page.goto(`${baseUrl}/console/payments/new`);
  await page.getByLabel('Recipient phone number').fill(uniqueNumber('+256701'));
  await page.getByLabel('Amount').fill('300');
  await page.getByLabel('Description').fill('Scheduled payout');
  await page.getByText('More options').click();
  await page.getByLabel('Send at').fill('tomorrow');
  await page.getByRole('button', { name: 'Send payment' }).click();
  await page.waitForURL(/\/console\/payments\/\d+\?done=payment-created$/);
  const id = Number(/\/console\/payments\/(\d+)/.exec(page.url())?.[1]);
  expect(await page.locator('#payment-state').textContent()).toBe('scheduled');
  await page.getByLabel('Reason').fill('Sent to the wrong number');
  await page.getByRole('button', { name: 'Cancel payment' }).click();
  await page.waitForURL(`${baseUrl}/console/payments/${id}?done=payment-cancelled`);
  expect(await page.getByText('Payment cancelled: its amount is back in the wallet.').isVisible()).toBe(true);
  expect(await page.locator('#payment-state').textContent()).toBe('cancelled');
  expect(await page.getByText('Sent to the wrong number').isVisible()).toBe(true);
  const transactions = await page.locator('#live table').textContent();
  expect(transactions).toContain('-300 BXC');
  expect(transactions).toContain('+300 BXC');
  const [row] = await testSql()<
    { state: string; cancelledReason: string }[]
  >`select state, cancelled_reason as "cancelledReason" from payments where id = ${id}`;
  expect(row).toEqual({ state: 'cancelled', cancelledReason: 'Sent to the wrong number' });
  // Its workflow, asleep until tomorrow, was woken by the cancellation and ended.
  const client = await testClient();
  await eventually(
    "the cancelled payment's workflow to end",
    async () => (await client.workflow.getHandle(`payment-${id}`).describe()).status.name === 'COMPLETED',
    30_000,
  );
}, 60_000);

test("see a wallet's transactions, each linked to what it belongs to", async () => {
  await page.goto(`${baseUrl}/console`);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Wallets' }).click();
  await page
    .getByRole('link', { name: /^#\d+$/ })
    .first()
    .click();
  await page.waitForURL(/\/console\/wallets\/\d+$/);
  const [wallet] = await testSql()<
    { balance: string }[]
  >`select balance::text as balance from accounts where organization_id = ${organizationId} and currency = 'BXC'`;
  expect(wallet!.balance).toBe('249000.0000');
  expect(await page.locator('#wallet-balance').textContent()).toBe('249,000 BXC');
  const rows = page.locator('table tbody tr');
  // Newest first: the cancelled payment's release and debit, the completed payment, the collection, the funding.
  const types = await rows.evaluateAll((cells) => cells.map((row) => row.children[2]!.textContent));
  expect(types).toEqual(['payment given back', 'payment sent', 'payment sent', 'collection received', 'funding']);
  expect(await rows.nth(2).textContent()).toContain('-2,500 BXC');
  expect(await rows.nth(3).textContent()).toContain('+1,500 BXC');
  await rows
    .nth(3)
    .getByRole('link', { name: /^collection #\d+$/ })
    .click();
  await page.waitForURL(/\/console\/collections\/\d+$/);
  expect(await page.getByRole('heading', { name: 'Wallet transactions' }).isVisible()).toBe(true);
  await page.goBack();
  await rows
    .nth(2)
    .getByRole('link', { name: /^payment #\d+$/ })
    .click();
  await page.waitForURL(/\/console\/payments\/\d+$/);
  expect(await page.locator('#payment-state').textContent()).toBe('completed');
});

test("the overview shows wallets, today's requests, collections and payments in one chart, and failures, also at phone width", async () => {
  // "Today" is the UTC day the page is drawn on: the request made earlier counts in it unless a
  // midnight came between (then it is yesterday's, and today has none).
  const utcDay = async () =>
    (await testSql()<{ day: string }[]>`select to_char(now() at time zone 'UTC', 'YYYY-MM-DD') as day`)[0]!.day;
  const [request] = await testSql()<{ day: string }[]>`
    select to_char(created at time zone 'UTC', 'YYYY-MM-DD') as day from collection_requests where organization_id = ${organizationId}`;
  const dayBefore = await utcDay();
  await page.goto(`${baseUrl}/console`);
  const today = await page.locator('section[aria-labelledby="today"]').textContent();
  const dayAfter = await utcDay();
  expect(await page.locator('section[aria-labelledby="wallets"]').textContent()).toContain('BXC');
  // (Only a page drawn across midnight itself leaves its day unknown.)
  if (dayBefore === dayAfter) {
    if (request!.day === dayBefore) expect(today).toContain('successful');
    else expect(today).not.toContain('successful');
  }
  expect(await page.locator('.chart svg rect.bar.received').count()).toBe(14);
  expect(await page.locator('.chart svg rect.bar.sent').count()).toBe(14);
  const days = await page.locator('section[aria-labelledby="days"]').textContent();
  expect(days).toContain('1 collection received');
  expect(days).toContain('1 payment sent');
  expect(await page.locator('.chart svg rect.bar.sent[height="0"]').count()).toBe(13);
  expect(await page.locator('section[aria-labelledby="failures"]').textContent()).toContain('contact.created');
  await page.screenshot({ path: screenshotPath('overview.png'), fullPage: true });
  const [payment] = await testSql()<{ id: number; accountId: number }[]>`
    select id, account_id as "accountId" from payments where organization_id = ${organizationId} and state = 'completed'`;
  for (const path of [
    '/console',
    '/console/requests',
    '/console/webhooks',
    '/console/sandbox',
    '/console/collections',
    '/console/settings/users',
    '/console/payments',
    '/console/payments/new',
    `/console/payments/${payment!.id}`,
    '/console/wallets',
    `/console/wallets/${payment!.accountId}`,
  ]) {
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(`${baseUrl}${path}`);
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect({ path, overflow }).toEqual({ path, overflow: 0 });
  }
  await page.setViewportSize({ width: 1200, height: 900 });
});

test('send a collection back from its page and watch the reversal complete', async () => {
  await page.goto(`${baseUrl}/console/collections?status=successful`);
  await page
    .getByRole('link', { name: /^#\d+$/ })
    .first()
    .click();
  await page.waitForURL(/\/console\/collections\/\d+$/);
  const collectionPage = page.url();
  await page.getByLabel('Reason').fill('Order cancelled');
  await page.getByRole('button', { name: 'Send back' }).click();
  await page.waitForURL(/\/console\/reversals\/\d+\?done=reversal-created$/);
  await page.locator('#reversal-state').getByText('completed').waitFor({ timeout: 60_000 });
  expect(await page.locator('#live table').textContent()).toContain('-1,500 BXC');
  await page.goto(collectionPage);
  expect(await page.locator('section[aria-labelledby="reversal"]').textContent()).toContain('completed');
  expect(await page.getByRole('button', { name: 'Send back' }).count()).toBe(0);
  // The request the collection paid ends reversed.
  await page
    .locator('dd')
    .getByRole('link', { name: /^#\d+$/ })
    .first()
    .click();
  await page.waitForURL(/\/console\/requests\/\d+$/);
  expect(await page.locator('#request-status').textContent()).toBe('reversed');
  await page.goto(`${baseUrl}/console/reversals`);
  expect(await page.locator('table tbody tr').first().textContent()).toContain('Order cancelled');
}, 90_000);

test("upload a CSV of payments, see each row's error in the preview, send a corrected file and watch the batch complete", async () => {
  const numbers = [uniqueNumber('+256772'), uniqueNumber('+256772'), uniqueNumber('+256772')];
  const upload = async (csv: string) => {
    await page.goto(`${baseUrl}/console/payments`);
    await page.getByRole('link', { name: 'Payment batches (bulk payouts)' }).click();
    await page.getByRole('link', { name: 'Upload a batch' }).click();
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'payroll.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.waitForURL(`${baseUrl}/console/payment-batches/preview`);
  };
  // A row with an amount that is no number: shown with its error, and nothing can be sent.
  await upload(
    `phonenumber,amount,currency,description\n${numbers[0]},1200,BXC,Payroll May\n${numbers[1]},twelve,BXC,Payroll May\n`,
  );
  expect(await page.getByRole('alert').textContent()).toContain('This batch cannot be sent as it is');
  expect(await page.locator('.row-errors').textContent()).toContain('amount:');
  expect(await page.getByRole('button', { name: /^Send/ }).count()).toBe(0);
  const before = await testSql()<
    { count: number }[]
  >`select count(*)::int as count from payment_batches where organization_id = ${organizationId}`;
  expect(before[0]!.count).toBe(0);

  await upload(
    `phonenumber,amount,currency,description\n${numbers.map((number, index) => `${number},${1000 + index * 100},BXC,Payroll May`).join('\n')}\n`,
  );
  expect(await page.getByRole('status').textContent()).toContain('3 payments ready');
  await page.getByRole('button', { name: 'Send 3 payments' }).click();
  await page.waitForURL(/\/console\/payment-batches\/\d+$/);
  // No reload: the progress bar refreshes itself until every row is final.
  await page.locator('#batch-state').getByText('completed').waitFor({ timeout: 60_000 });
  expect(await page.locator('#live progress').getAttribute('value')).toBe('3');
  await page.reload();
  expect(await page.locator('table tbody tr').count()).toBe(3);
  expect(await page.locator('table tbody').textContent()).toContain('completed');
  await page.screenshot({ path: screenshotPath('payment-batch.png'), fullPage: true });
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download the results (CSV)' }).click(),
  ]);
  const results = await new Response((await download.createReadStream()) as unknown as ReadableStream).text();
  expect(results.trim().split('\n')).toHaveLength(4);
  expect(results).toContain(`${numbers[2]},1200.0000,BXC,Payroll May,completed`);
}, 90_000);

test("see a wallet's statement for a period: its closing balance is the wallet's balance, and it downloads as CSV", async () => {
  const [wallet] = await testSql()<{ id: number; balance: string }[]>`
    select id, balance::text as balance from accounts where organization_id = ${organizationId} and currency = 'BXC'`;
  await page.goto(`${baseUrl}/console/wallets/${wallet!.id}`);
  await page.getByLabel('From').fill('2000-01-01');
  await page.getByRole('button', { name: 'Show statement' }).click();
  await page.waitForURL(/\/statement\?/);
  expect(await page.locator('#opening-balance').textContent()).toBe('0 BXC');
  const balance = await page.locator('#closing-balance').textContent();
  expect(balance!.replaceAll(',', '')).toBe(`${Number(wallet!.balance)} BXC`);
  expect(await page.locator('table tbody tr').count()).toBeGreaterThan(5);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download as CSV' }).click(),
  ]);
  const csv = await new Response((await download.createReadStream()) as unknown as ReadableStream).text();
  expect(csv.trim().split('\n').at(-1)).toContain(`closing_balance,,,,${wallet!.balance},BXC`);
}, 60_000);

test("see the day's settlement: totals, every movement with the operator's id, and its CSV download", async () => {
  const [payment] = await testSql()<{ id: number; remoteTransactionId: string; modified: Date }[]>`
    select id, remote_transaction_id as "remoteTransactionId", modified from payments
    where organization_id = ${organizationId} and state = 'completed' and amount = 2500`;
  const day = payment!.modified.toISOString().slice(0, 10);
  await page.goto(`${baseUrl}/console`);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Settlement' }).click();
  await page.getByLabel('Day').fill(day);
  await page.getByLabel('Currency').selectOption('BXC');
  await page.getByRole('button', { name: 'Show settlement' }).click();
  await page.waitForURL(/\/console\/settlements\?/);
  expect(await page.locator('table').first().textContent()).toContain('BXC');
  const movement = page.locator('table tbody tr', { has: page.locator(`a[href="/console/payments/${payment!.id}"]`) });
  expect(await movement.textContent()).toContain(payment!.remoteTransactionId);
  expect(await movement.textContent()).toContain('-2,500 BXC');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download as CSV' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe(`settlement-${day}-BXC.csv`);
  const csv = await new Response((await download.createReadStream()) as unknown as ReadableStream).text();
  expect(csv).toContain(
    `,BXC,payment,${payment!.id},${organizationId},${payment!.remoteTransactionId},pay-${payment!.id},,,2500.0000,,${supplier},`,
  );
  expect(csv).toMatch(/\nMTN Uganda,BXC,net,,,,,,,-?\d+\.\d{4},,,,\n/);
}, 60_000);

test('change a webhook in the console, then find the change on the audit trail by searching for the webhook', async () => {
  await page.goto(`${baseUrl}/console/webhooks`);
  await page.getByLabel('Target URL').fill('https://audit.browser.example/first');
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.waitForURL(/\/console\/webhooks\/\d+\?done=webhook-created/);
  const webhookId = /\/console\/webhooks\/(\d+)/.exec(page.url())![1]!;
  await page.getByLabel('Target URL').fill('https://audit.browser.example/second');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.waitForURL(/done=webhook-updated/);

  await page.getByRole('link', { name: 'Audit trail' }).click();
  await page.waitForURL(`${baseUrl}/console/audit`);
  await page.locator('summary', { hasText: 'Filters' }).click();
  await page.getByLabel('Object type').selectOption('webhook');
  await page.getByLabel('Object id').fill(webhookId);
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/object_id=/);
  const rows = page.locator('table tbody tr');
  expect(await rows.count()).toBe(2);
  // Newest first: the edit, with the target before and after, then the creation.
  const edit = (await rows.nth(0).textContent())!;
  expect(edit).toContain('POST /console/webhooks/:id');
  expect(edit).toContain('"https://audit.browser.example/first" → "https://audit.browser.example/second"');
  expect(edit).toContain('Manager');
  expect(edit).toContain('console');
  // The real server tells the connection's address (no proxy in front, TRUST_PROXY off).
  expect(edit).toMatch(/127\.0\.0\.1|::1/);
  expect(await rows.nth(1).textContent()).toContain('POST /console/webhooks');
});

test('no console errors on any page visited', () => {
  expect(consoleErrors).toEqual([]);
  expect(apiOutput).not.toContain('"level":"error"');
});
