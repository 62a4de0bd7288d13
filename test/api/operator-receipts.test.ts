/**
 * The receipt of an STK push credited before its receipt was known, against real PostgreSQL (the
 * services the connector and the workflows call, no workflow here): the push's own credit and the
 * receipt attaching to it, racing, meet in one collection under the receipt, credited once; a receipt
 * attaches only to the push the operator names for it (never to one of its number and amount), to one
 * push only, and a push takes one receipt; a receipt another collection holds is never taken
 * (docs/architecture.md#one-receipt-one-credit).
 */
import { beforeAll, describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { asId } from '../../src/domain/ids';
import { promptReference } from '../../src/domain/collections';
import { receivePayment, storeIncomingPayment } from '../../src/services/collections/collection-receiving';
import { attachReceipt, markPromptPaid, recordOperation } from '../../src/services/networks/journal';
import { fundWallet } from '../../src/services/merchants/organizations';
import { walletsOutOfBalance } from '../../src/services/wallets/wallets';
import type { IncomingPaymentInput } from '../../src/contracts/incoming-collection';
import { createMerchant, numberSequence, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';

const NETWORK = 'Safaricom';
let ctx: TestApp;
const nextNumber = numberSequence('+254722');
const receiptNumber = () => randomBytes(8).toString('hex').toUpperCase().slice(0, 10);

beforeAll(async () => {
  ctx = await testApp();
});

async function kesMerchant(): Promise<TestMerchant> {
  const merchant = await createMerchant(ctx.app);
  await fundWallet(testSql(), merchant.organization.id, 'KES', '10');
  return merchant;
}

/** An open request of the merchant's, and a push of ours for it that the STK push query said was paid while its receipt is unknown. */
async function paidPush(merchant: TestMerchant, phoneNumber: string, amount: string) {
  const created = await merchant.request('/api/collectionrequests', {
    form: { phonenumber: phoneNumber, amount, currency: 'KES', send_instructions: 'false' },
  });
  expect(created.status).toBe(201);
  const reference = promptReference(asId('CollectionRequest', created.body.id as number), 1);
  const checkoutRequestId = `ws_CO_${randomBytes(8).toString('hex')}`;
  const operation = await recordOperation(testSql(), {
    network: NETWORK,
    kind: 'prompt',
    reference,
    operatorReference: checkoutRequestId,
    workflowId: `collection-request-${created.body.id}`,
    subject: reference,
    phoneNumber,
    amount,
  });
  expect(await markPromptPaid(testSql(), operation.id, null)).toBe(true);
  const payment: IncomingPaymentInput = {
    network: NETWORK,
    remoteTransactionId: checkoutRequestId,
    phoneNumber,
    amount,
    currency: 'KES',
    reference: '',
    promptReference: reference,
    paymentDate: new Date().toISOString(),
  };
  return { requestId: created.body.id as number, reference, checkoutRequestId, payment };
}

/** The push's payment, credited under the push as its request's workflow credits it. */
const creditPush = async (push: Awaited<ReturnType<typeof paidPush>>) =>
  await receivePayment(testSql(), push.payment, () => false);

/** Every collection of a number, with its credits. */
const collectionsOf = async (phoneNumber: string) => [
  ...(await testSql()<{ remoteTransactionId: string; status: string; requestId: number | null; credits: number }[]>`
  select c.remote_transaction_id as "remoteTransactionId", c.status, c.collection_request_id::int as "requestId",
         (select count(*)::int from transactions t where t.collection_id = c.id and t.type = 'mobile_collection') as credits
  from collections c where c.network = ${NETWORK} and c.phone_number = ${phoneNumber} order by c.id`),
];

const promptReceipt = async (reference: string) =>
  (
    await testSql()<
      { receipt: string | null }[]
    >`select remote_transaction_id as receipt from network_operations where network = ${NETWORK} and reference = ${reference}`
  )[0]!.receipt;

const requestReceipt = async (requestId: number) =>
  (
    await testSql()<
      { receipt: string | null }[]
    >`select remote_transaction_id as receipt from collection_requests where id = ${requestId}`
  )[0]!.receipt;

describe('a receipt learnt after its push was credited', () => {
  test("the push's credit and its receipt attaching at once, in either order, twelve times: one collection, under the receipt, credited once", async () => {
    const merchant = await kesMerchant();
    for (let round = 0; round < 12; round += 1) {
      const phoneNumber = nextNumber();
      const push = await paidPush(merchant, phoneNumber, '75');
      const receipt = receiptNumber();
      const attach = () =>
        attachReceipt(testSql(), NETWORK, { phoneNumber, amount: '75' }, receipt, push.checkoutRequestId);
      const [credited, attachedTo] =
        round % 2 === 0
          ? await Promise.all([creditPush(push), attach()])
          : (await Promise.all([attach(), creditPush(push)])).reverse();
      expect(credited).toMatchObject({ outcome: 'accepted', requestId: push.requestId });
      expect(attachedTo).toBe(push.reference);
      expect(await collectionsOf(phoneNumber)).toEqual([
        { remoteTransactionId: receipt, status: 'successful', requestId: push.requestId, credits: 1 },
      ]);
      expect(await promptReceipt(push.reference)).toBe(receipt);
      expect(await requestReceipt(push.requestId)).toBe(receipt);
      // The credit repeated (a retried activity) finds the same collection.
      expect(await creditPush(push)).toMatchObject({ outcome: 'accepted', requestId: push.requestId });
      expect(await collectionsOf(phoneNumber)).toHaveLength(1);
    }
    expect(await walletsOutOfBalance(testSql(), merchant.organization.id)).toEqual([]);
  }, 30_000);

  test('two pushes of one number and amount, of two organizations, awaiting receipts; four receipts at once, two named for the first push, one for the second, one for none: each push takes one named for it, the one named for none goes to no push', async () => {
    const phoneNumber = nextNumber();
    const pushes = [
      await paidPush(await kesMerchant(), phoneNumber, '80'),
      await paidPush(await kesMerchant(), phoneNumber, '80'),
    ];
    for (const push of pushes)
      expect(await creditPush(push)).toMatchObject({ outcome: 'accepted', requestId: push.requestId });
    const named = [pushes[0]!.checkoutRequestId, pushes[0]!.checkoutRequestId, pushes[1]!.checkoutRequestId, null];
    const receipts = named.map(() => receiptNumber());
    const attachedTo = await Promise.all(
      receipts.map((receipt, index) =>
        attachReceipt(testSql(), NETWORK, { phoneNumber, amount: '80' }, receipt, named[index]!),
      ),
    );
    expect(attachedTo[3]).toBeNull();
    expect(attachedTo[2]).toBe(pushes[1]!.reference);
    expect(attachedTo.slice(0, 2).sort()).toEqual([null, pushes[0]!.reference].sort());
    const firstReceipt = receipts[attachedTo.indexOf(pushes[0]!.reference)]!;
    expect(await promptReceipt(pushes[0]!.reference)).toBe(firstReceipt);
    expect(await promptReceipt(pushes[1]!.reference)).toBe(receipts[2]!);
    expect(await collectionsOf(phoneNumber)).toEqual([
      { remoteTransactionId: firstReceipt, status: 'successful', requestId: pushes[0]!.requestId, credits: 1 },
      { remoteTransactionId: receipts[2]!, status: 'successful', requestId: pushes[1]!.requestId, credits: 1 },
    ]);
  });

  test('a receipt named for no push, or for a push of another number or amount, is never taken by a push of its number and amount: the push keeps its credit under its CheckoutRequestID', async () => {
    const phoneNumber = nextNumber();
    const push = await paidPush(await kesMerchant(), phoneNumber, '90');
    const elsewhere = await paidPush(await kesMerchant(), nextNumber(), '90');
    await creditPush(push);
    await creditPush(elsewhere);
    const receipt = receiptNumber();
    expect(await attachReceipt(testSql(), NETWORK, { phoneNumber, amount: '90' }, receipt, null)).toBeNull();
    expect(
      await attachReceipt(testSql(), NETWORK, { phoneNumber, amount: '90' }, receipt, elsewhere.checkoutRequestId),
    ).toBeNull();
    expect(
      await attachReceipt(testSql(), NETWORK, { phoneNumber, amount: '91' }, receipt, push.checkoutRequestId),
    ).toBeNull();
    expect(await promptReceipt(push.reference)).toBeNull();
    expect(await promptReceipt(elsewhere.reference)).toBeNull();
    expect(await collectionsOf(phoneNumber)).toEqual([
      { remoteTransactionId: push.checkoutRequestId, status: 'successful', requestId: push.requestId, credits: 1 },
    ]);
  });

  test('a receipt another collection already holds is not taken: the push keeps waiting for its own, under its CheckoutRequestID', async () => {
    const phoneNumber = nextNumber();
    const push = await paidPush(await kesMerchant(), phoneNumber, '85');
    await creditPush(push);
    const receipt = receiptNumber();
    await storeIncomingPayment(testSql(), { ...push.payment, remoteTransactionId: receipt, promptReference: null });
    expect(
      await attachReceipt(testSql(), NETWORK, { phoneNumber, amount: '85' }, receipt, push.checkoutRequestId),
    ).toBeNull();
    expect(await promptReceipt(push.reference)).toBeNull();
    expect(await collectionsOf(phoneNumber)).toEqual([
      { remoteTransactionId: push.checkoutRequestId, status: 'successful', requestId: push.requestId, credits: 1 },
      { remoteTransactionId: receipt, status: 'pending', requestId: null, credits: 0 },
    ]);
  });
});
