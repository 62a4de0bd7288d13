/**
 * Tenant-safe matching (docs/architecture.md#tenant-safe-matching) on the real worker and dev server: a payment that
 * answers a prompt goes to the prompting request only, however many look-alike requests other
 * merchants opened, and a payment without a prompt reference is matched only when exactly one
 * organization has such an open request.
 */
import { asId } from '../../src/domain/ids';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import {
  createMerchant,
  eventually,
  numberSequence,
  recordHistory,
  startWorker,
  testApp,
  testSql,
  uniqueTaskQueue,
  type TestApp,
  type TestMerchant,
  type WorkerProcess,
} from '../helpers';

const taskQueue = uniqueTaskQueue('tenant-matching');
let worker: WorkerProcess;
let ctx: TestApp;

beforeAll(async () => {
  worker = await startWorker(taskQueue, { SANDBOX_PAYMENT_DELAY_SECONDS: '1' });
  ctx = await testApp(taskQueue);
});

afterAll(async () => {
  await worker?.stop();
});

const nextNumber = numberSequence('+256772');

async function open(merchant: TestMerchant, phone: string, amount: string, prompt: boolean): Promise<number> {
  const response = await merchant.request('/api/collectionrequests', {
    form: { phonenumber: phone, amount, currency: 'BXC', send_instructions: String(prompt), expiry_date: '2 minutes' },
  });
  expect(response.status).toBe(201);
  return response.body.id;
}

const requestRow = async (id: number) =>
  (
    await testSql()<{ status: string; collectionId: number | null }[]>`
    select status, collection_id as "collectionId" from collection_requests where id = ${id}`
  )[0]!;

/**
 * The row of a request nobody is prompted for, once its workflow has taken it up: created `new`,
 * it is `pending` after the workflow's first step (whatever a payment did meanwhile), so reading
 * it right after its creation would race that step.
 */
const settledRow = (id: number) =>
  eventually(`request ${id} to leave new`, async () => {
    const row = await requestRow(id);
    return row.status === 'new' ? undefined : row;
  });

/** Credits per organization from collections of these numbers. */
async function creditsByOrganization(phones: string[]): Promise<Map<number, number>> {
  const rows = await testSql()<{ organizationId: number; credits: number }[]>`
    select a.organization_id as "organizationId", count(*)::int as credits
    from transactions t join accounts a on a.id = t.account_id join collections c on c.id = t.collection_id
    where c.phone_number in ${testSql()(phones)} group by a.organization_id`;
  return new Map(rows.map((row) => [row.organizationId, row.credits]));
}

describe('a payment answering a prompt', () => {
  test('goes to the merchant whose prompt it answered, for many look-alike pairs at once', async () => {
    const prompting = await createMerchant(ctx.app);
    const lurking = await createMerchant(ctx.app);
    const pairs = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const phone = nextNumber();
        // The look-alike is opened first, so "the oldest open match" would have been the lurker's.
        const lurkerRequest = await open(lurking, phone, '321', false);
        const promptedRequest = await open(prompting, phone, '321', true);
        return { phone, lurkerRequest, promptedRequest };
      }),
    );
    await Promise.all(
      pairs.map(({ promptedRequest }) =>
        ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', promptedRequest))).result(),
      ),
    );
    for (const { promptedRequest, lurkerRequest } of pairs) {
      expect(await requestRow(promptedRequest)).toMatchObject({ status: 'successful' });
      expect(await settledRow(lurkerRequest)).toEqual({ status: 'pending', collectionId: null });
    }
    const credits = await creditsByOrganization(pairs.map((pair) => pair.phone));
    expect(credits.get(prompting.organization.id)).toBe(pairs.length);
    expect(credits.get(lurking.organization.id)).toBeUndefined();
    const [prompted] = await testSql()<{ references: number }[]>`
      select count(*)::int as references from collections
      where phone_number in ${testSql()(pairs.map((pair) => pair.phone))} and prompt_reference like 'req-%'`;
    expect(prompted!.references).toBe(pairs.length);
  }, 120_000);
});

describe('a payment without a prompt reference', () => {
  async function report(phone: string, amount: string, id: string) {
    const started = await ctx.launcher.startIncomingCollection({
      network: 'MTN Uganda',
      remoteTransactionId: id,
      phoneNumber: phone,
      amount,
      currency: 'BXC',
      reference: 'walk-in',
      paymentDate: new Date().toISOString(),
    });
    return await ctx.client.workflow.getHandle(started.workflowId).result();
  }

  test('matches when exactly one organization has such an open request (its oldest)', async () => {
    const merchant = await createMerchant(ctx.app);
    const phone = nextNumber();
    const oldest = await open(merchant, phone, '55', false);
    await open(merchant, phone, '55', false);
    const result = await report(phone, '55', `WALKIN-${oldest}`);
    expect(result).toMatchObject({ outcome: 'accepted', requestId: oldest });
    // The request's workflow heard of it (the collectionMatched signal) and ended successful.
    expect(
      await ctx.client.workflow.getHandle(collectionRequestWorkflowId(asId('CollectionRequest', oldest))).result(),
    ).toMatchObject({ status: 'successful' });
    await recordHistory(
      ctx.client,
      incomingCollectionWorkflowId('MTN Uganda', `WALKIN-${oldest}`),
      'incoming-collection-accepted',
    );
    await recordHistory(
      ctx.client,
      collectionRequestWorkflowId(asId('CollectionRequest', oldest)),
      'collection-request-matched-by-report',
    );
  });

  test('stays unassigned when two organizations have one, and only a claim assigns it', async () => {
    const first = await createMerchant(ctx.app);
    const second = await createMerchant(ctx.app);
    const phone = nextNumber();
    const firstRequest = await open(first, phone, '77', false);
    const secondRequest = await open(second, phone, '77', false);
    const id = `WALKIN-AMBIGUOUS-${firstRequest}`;
    const result = await report(phone, '77', id);
    expect(result.outcome).toBe('unmatched');
    // Neither request was given the collection: both open (pending once their workflows ran), unassigned.
    expect(await settledRow(firstRequest)).toEqual({ status: 'pending', collectionId: null });
    expect(await settledRow(secondRequest)).toEqual({ status: 'pending', collectionId: null });
    const claimed = await second.request(
      `/api/collections?claim=True&amount=77&remote_transaction_id=${id}&phonenumber=${encodeURIComponent(phone)}`,
    );
    expect(claimed.status).toBe(200);
    expect(claimed.body).toHaveLength(1);
    expect(claimed.body[0].organization).toBe(second.organization.id);
    expect((await creditsByOrganization([phone])).get(second.organization.id)).toBe(1);
  });

  test('a prompt reference naming a request the payment does not fit leaves it unassigned', async () => {
    const merchant = await createMerchant(ctx.app);
    const phone = nextNumber();
    const requestId = await open(merchant, phone, '90', false);
    const started = await ctx.launcher.startIncomingCollection({
      network: 'MTN Uganda',
      remoteTransactionId: `MISFIT-${requestId}`,
      phoneNumber: phone,
      amount: '91',
      currency: 'BXC',
      reference: 'x',
      paymentDate: new Date().toISOString(),
      promptReference: `req-${requestId}-1`,
    });
    expect((await ctx.client.workflow.getHandle(started.workflowId).result()).outcome).toBe('unmatched');
    expect(await settledRow(requestId)).toEqual({ status: 'pending', collectionId: null });
    expect(incomingCollectionWorkflowId('MTN Uganda', `MISFIT-${requestId}`)).toBe(started.workflowId);
  });
});
