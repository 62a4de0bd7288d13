/**
 * A network with a connector is believed only through its operator (docs/going-live.md, "Which
 * routes each operator may use"), and the sandbox's simulated money never shares a deployment with
 * a live connector ("The sandbox and live connectors do not mix"). Everything here is refused by the
 * API's validation, so the app runs with MTN MoMo configured and no operator is ever called.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { issueNetworkSecret } from '../../src/services/networks/network-credentials';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { ConsoleClient, PASSWORD, consoleUser } from '../console-helpers';
import {
  LIVE_METRICS_TOKEN,
  createMerchant,
  numberSequence,
  requester,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
} from '../helpers';

const MOMO = {
  MTN_MOMO_COLLECTION_SUBSCRIPTION_KEY: 'c-key',
  MTN_MOMO_COLLECTION_API_USER: 'c-user',
  MTN_MOMO_COLLECTION_API_KEY: 'c-api-key',
  MTN_MOMO_DISBURSEMENT_SUBSCRIPTION_KEY: 'd-key',
  MTN_MOMO_DISBURSEMENT_API_USER: 'd-user',
  MTN_MOMO_DISBURSEMENT_API_KEY: 'd-api-key',
  // Nothing listens here: a call to the operator would fail the test rather than reach anyone.
  MTN_MOMO_BASE_URL: 'http://127.0.0.1:9',
  PUBLIC_BASE_URL: 'https://collections.example',
};

let connected: TestApp;
let merchant: TestMerchant;
const mtnNumber = numberSequence('+256772');
const airtelNumber = numberSequence('+256701');
const tigoNumber = numberSequence('+25565');
const started: string[] = [];

beforeAll(async () => {
  connected = await testApp(uniqueTaskQueue('connected'), { ...MOMO, SANDBOX: 'true' });
  merchant = await createMerchant(connected.app);
});

afterAll(async () => {
  await Promise.all(
    started.map((id) =>
      connected.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => {}),
    ),
  );
});

const tag = () => randomBytes(4).toString('hex').toUpperCase();
const report = (secret: string, body: Record<string, unknown>) =>
  requester(connected.app, null)('/network/payments', { body, headers: { Authorization: `Bearer ${secret}` } });

async function workflowExists(workflowId: string): Promise<boolean> {
  try {
    await connected.client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

describe('a connected network reports nothing through the generic route', () => {
  test('MTN Uganda, connected through MoMo: every report refused with 403, concurrently, nothing stored, started or credited', async () => {
    const secret = await issueNetworkSecret(testSql(), 'MTN Uganda');
    const phone = mtnNumber();
    // The request a forged report would name (it answers a prompt of the merchant's own).
    const created = await merchant.request('/api/collectionrequests', {
      body: { phonenumber: phone, amount: '600', currency: 'BXC' },
    });
    expect(created.status).toBe(201);
    started.push(`collection-request-${created.body.id}`);
    const [before] = await testSql()<
      { balance: string }[]
    >`select balance::text from accounts where organization_id = ${merchant.organization.id} and currency = 'BXC'`;
    const ids = Array.from({ length: 12 }, () => `PTMTN${tag()}`);
    const answers = await Promise.all(
      ids.map((id, index) =>
        report(secret, {
          network: 'MTN Uganda',
          remote_transaction_id: id,
          phonenumber: phone,
          amount: '600',
          currency: index % 2 ? 'UGX' : 'BXC',
          prompt_reference: `req-${created.body.id}-1`,
        }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answer.body.detail).toContain("believed only through the operator's status query");
    }
    expect(await testSql()`select id from collections where remote_transaction_id in ${testSql()(ids)}`).toHaveLength(
      0,
    );
    for (const id of ids) expect(await workflowExists(incomingCollectionWorkflowId('MTN Uganda', id))).toBe(false);
    const [after] = await testSql()<
      { balance: string }[]
    >`select balance::text from accounts where organization_id = ${merchant.organization.id} and currency = 'BXC'`;
    expect(after).toEqual(before!);
  });

  test('the 403 comes before the body is read, and a wrong secret is still a 401', async () => {
    const secret = await issueNetworkSecret(testSql(), 'MTN Uganda');
    expect((await report(secret, { nonsense: '\u0000' })).status).toBe(403);
    // A wrong secret is judged before a body PostgreSQL could not store (a NUL) or one too large.
    expect((await report('not-a-secret', { network: 'MTN\u0000Uganda' })).status).toBe(401);
    expect((await report('not-a-secret', { network: 'x'.repeat(2_000_000) })).status).toBe(401);
  });
});

describe('a network with no connector reports only where the sandbox simulates it', () => {
  const tigoReport = (secret: string, send: typeof report, id: string) =>
    send(secret, {
      network: 'Tigo Tanzania',
      remote_transaction_id: id,
      phonenumber: tigoNumber(),
      amount: '1500',
      currency: 'TZS',
    });

  test("while a connector is on, Tigo Tanzania's report of TZS is refused on the currency; nothing stored or started", async () => {
    const secret = await issueNetworkSecret(testSql(), 'Tigo Tanzania');
    const id = `TIGO${tag()}`;
    const answer = await tigoReport(secret, report, id);
    expect(answer.status).toBe(400);
    expect(answer.body.currency[0]).toContain('Tigo Tanzania has no connector here');
    expect(await testSql()`select id from collections where remote_transaction_id = ${id}`).toHaveLength(0);
    expect(await workflowExists(incomingCollectionWorkflowId('Tigo Tanzania', id))).toBe(false);
  });

  test("outside sandbox mode, with no connector on, Tigo Tanzania's report of TZS is refused on the currency", async () => {
    const live = await testApp(uniqueTaskQueue('live-reports'), {
      SANDBOX: 'false',
      PUBLIC_BASE_URL: 'https://collections.example',
      METRICS_TOKEN: LIVE_METRICS_TOKEN,
    });
    const liveReport = (secret: string, body: Record<string, unknown>) =>
      requester(live.app, null)('/network/payments', { body, headers: { Authorization: `Bearer ${secret}` } });
    const secret = await issueNetworkSecret(testSql(), 'Tigo Tanzania');
    const id = `TIGO${tag()}`;
    const answer = await tigoReport(secret, liveReport, id);
    expect(answer.status).toBe(400);
    expect(answer.body.currency[0]).toContain('taken only in sandbox mode');
    expect(await testSql()`select id from collections where remote_transaction_id = ${id}`).toHaveLength(0);
    expect(await workflowExists(incomingCollectionWorkflowId('Tigo Tanzania', id))).toBe(false);
  });
});

describe('while a connector is on, the sandbox simulates BXC only', () => {
  test('the sandbox network reports BXC, but no real currency of any network', async () => {
    const secret = await issueNetworkSecret(testSql(), 'Sandbox');
    const send = (body: Record<string, unknown>) =>
      report(secret, { network: 'Sandbox', remote_transaction_id: `SBX-${tag()}`, amount: '1000', ...body });
    const airtel = await send({ phonenumber: airtelNumber(), currency: 'UGX' });
    expect(airtel.status).toBe(400);
    expect(airtel.body.currency[0]).toContain('the sandbox simulates BXC only');
    const mtn = await send({ phonenumber: mtnNumber(), currency: 'UGX' });
    expect(mtn.status).toBe(400);
    expect(mtn.body.currency[0]).toContain('MTN Uganda is connected through its operator');
    const bxc = await send({ phonenumber: airtelNumber(), currency: 'BXC' });
    expect(bxc.status).toBe(202);
    started.push(bxc.body.workflow_id);
  });

  test('prompts and payments in a real currency on a network with no connector are refused with a clear message', async () => {
    const prompt = await merchant.request('/api/collectionrequests', {
      body: { phonenumber: airtelNumber(), amount: '1000', currency: 'UGX' },
    });
    expect(prompt.status).toBe(400);
    expect(prompt.body.phonenumber[0]).toContain('the sandbox simulates BXC only');
    const payment = await merchant.request('/api/payments', {
      body: { phonenumber: airtelNumber(), amount: '1000', currency: 'UGX', description: 'Salary' },
    });
    expect(payment.status).toBe(400);
    expect(payment.body).toMatchObject({ phonenumber: [expect.stringContaining('the sandbox simulates BXC only')] });
    // Safaricom has no connector in this deployment: KES is refused the same way.
    const kes = await merchant.request('/api/collectionrequests', {
      body: { phonenumber: '+254712000123', amount: '10', currency: 'KES' },
    });
    expect(kes.status).toBe(400);
    expect(kes.body.phonenumber[0]).toContain('Safaricom has no connector here');
    expect(
      await testSql()`select id from collection_requests where organization_id = ${merchant.organization.id} and currency <> 'BXC'`,
    ).toHaveLength(0);
  });

  test("the console's sandbox page refuses a real currency and still simulates BXC", async () => {
    const user = await consoleUser(merchant.organization.id, { role: 'developer' });
    const browser = new ConsoleClient(connected.app);
    expect((await browser.signIn(user.email, PASSWORD)).status).toBe(303);
    await browser.get('/console/sandbox');
    const phone = airtelNumber();
    const refused = await browser.post('/console/sandbox/payments', {
      phonenumber: phone,
      amount: '1000',
      currency: 'UGX',
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('the sandbox simulates BXC only');
    expect(await testSql()`select id from collections where phone_number = ${phone}`).toHaveLength(0);
    const simulated = await browser.post('/console/sandbox/payments', {
      phonenumber: phone,
      amount: '1000',
      currency: 'BXC',
    });
    expect(simulated.status).toBe(200);
    started.push(/\(workflow ([^)]+)\)/.exec(simulated.text)![1]!);
  });
});
