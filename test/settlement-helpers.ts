/**
 * Movements of money with a network, made through the services the workflows call (no worker
 * needed), each then dated at the moment it became final that a settlement test needs: a collection
 * credited, a payment completed (or refused) by the network, a collection sent back.
 */
import { asId } from '../src/domain/ids';
import { expect } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { acceptVerified, storeIncomingPayment } from '../src/services/collections/collection-receiving';
import { beginPayment, finishPayment } from '../src/services/payments/payment-state';
import { finishReversal } from '../src/services/payments/reversals';
import { testSql, uniqueNumber, type TestMerchant } from './helpers';

let serial = 0;
/** A fresh operator transaction id: `prefix` then 9 random letters and digits (10 characters with a one-letter prefix, as M-Pesa's receipts). */
export const operatorId = (prefix: string): string =>
  `${prefix}${randomBytes(5).toString('hex').toUpperCase().slice(0, 9)}`;

/** A collection from a new number with `prefix`, credited to `owner` at `finalAt`, as the incoming-collection workflow leaves it. */
export async function collected(
  owner: TestMerchant,
  network: string,
  prefix: string,
  currency: string,
  amount: string,
  finalAt: string,
) {
  const remoteTransactionId = operatorId('C');
  const phoneNumber = uniqueNumber(prefix);
  const promptReference = `req-${++serial}-0`;
  const collection = await storeIncomingPayment(testSql(), {
    network,
    remoteTransactionId,
    phoneNumber,
    amount,
    currency,
    reference: 'Order 1',
    paymentDate: finalAt,
    promptReference,
  });
  await acceptVerified(testSql(), collection.id, owner.organization.id);
  await testSql()`update transactions set created = ${new Date(finalAt)} where collection_id = ${collection.id} and type = 'mobile_collection'`;
  return { id: collection.id, remoteTransactionId, phoneNumber, promptReference };
}

/** A payment to a new number with `prefix` that the network completed (or refused) at `finalAt`. */
export async function paid(
  owner: TestMerchant,
  prefix: string,
  currency: string,
  amount: string,
  finalAt: string,
  outcome: 'completed' | 'rejected' = 'completed',
) {
  const phoneNumber = uniqueNumber(prefix);
  const created = await owner.request('/api/payments', {
    form: { phonenumber: phoneNumber, amount, currency, description: 'Settlement test' },
  });
  expect(created.status).toBe(201);
  const id: number = created.body.id;
  const remoteTransactionId = operatorId('P');
  await beginPayment(testSql(), asId('Payment', id));
  await finishPayment(
    testSql(),
    asId('Payment', id),
    outcome === 'completed'
      ? { status: 'completed', remoteTransactionId }
      : { status: 'rejected', error: 'Recipient not registered', remoteTransactionId: null },
  );
  await testSql()`update payments set modified = ${new Date(finalAt)} where id = ${id}`;
  return { id, remoteTransactionId, phoneNumber };
}

/** A collection of `owner` sent back, completed by the network at `finalAt`. */
export async function reversed(owner: TestMerchant, collectionId: number, finalAt: string) {
  const created = await owner.request('/api/reversals', { form: { collection: String(collectionId) } });
  expect(created.status).toBe(201);
  const remoteTransactionId = operatorId('R');
  await finishReversal(testSql(), created.body.id, { status: 'completed', remoteTransactionId });
  await testSql()`update reversals set modified = ${new Date(finalAt)} where id = ${created.body.id}`;
  return { id: created.body.id as number, remoteTransactionId };
}
