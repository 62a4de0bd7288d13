import { describe, expect, test } from 'bun:test';
import {
  CURRENT_API_VERSION,
  collectionForVersion,
  collectionRequestForVersion,
  listForVersion,
  parseApiVersion,
  type ApiVersion,
  type CollectionResource,
} from '../../src/domain/versions';

const context = (version: ApiVersion) => ({ version, organizationName: 'Acme Ltd' });

/** A collection in its current shape, as the collections resource will serialise it. */
const collection: CollectionResource = {
  id: 7,
  remote_transaction_id: 'MP240501.1234.A00001',
  organization: 12,
  amount: '500.0000',
  currency: 'UGX',
  phonenumber: '+256772123456',
  status: 'successful',
  collection_request: { id: 31, amount: '500.0000', status: 'successful' },
  transaction: { id: 99, amount: '500.0000', currency: 'UGX', type: 'mobile_collection' },
};

describe('versions', () => {
  test('parses vN and N, refuses anything unknown; the current version is the newest', () => {
    expect(parseApiVersion('v3')).toBe(3);
    expect(parseApiVersion('V1')).toBe(1);
    expect(parseApiVersion('2')).toBe(2);
    for (const text of ['v0', 'v5', '', 'v', 'latest', '3.0']) expect(parseApiVersion(text)).toBeNull();
    expect(CURRENT_API_VERSION).toBe(4);
  });

  test('v1 lists are the bare page; later versions keep the envelope', () => {
    const list = { count: 3, next: 'http://x/?offset=2', previous: null, results: [1, 2] };
    expect(listForVersion(list, context(1))).toEqual([1, 2]);
    for (const version of [2, 3, 4] as const) expect(listForVersion(list, context(version))).toBe(list);
  });

  test('collections: v1 name and numeric currency, request id before v3, transaction from v4', () => {
    const v1 = collectionForVersion(collection, context(1));
    expect(v1).toMatchObject({ organization: 'Acme Ltd', currency: 2, collection_request: 31 });
    expect(v1).not.toHaveProperty('transaction');
    const v2 = collectionForVersion(collection, context(2));
    expect(v2).toMatchObject({ organization: 12, currency: 'UGX', collection_request: 31 });
    expect(v2).not.toHaveProperty('transaction');
    const v3 = collectionForVersion(collection, context(3));
    expect(v3.collection_request).toEqual(collection.collection_request);
    expect(v3).not.toHaveProperty('transaction');
    expect(collectionForVersion(collection, context(4))).toEqual(collection);
    expect(collectionForVersion({ ...collection, collection_request: null }, context(1)).collection_request).toBeNull();
  });

  test('the version functions never change their input', () => {
    const before = JSON.stringify(collection);
    for (const version of [1, 2, 3, 4] as const) collectionForVersion(collection, context(version));
    expect(JSON.stringify(collection)).toBe(before);
  });

  test('collection requests differ only in organization', () => {
    const request = { id: 31, organization: 12, amount: '500.0000' };
    expect(collectionRequestForVersion(request, context(1))).toEqual({ ...request, organization: 'Acme Ltd' });
    expect(collectionRequestForVersion(request, context(3))).toEqual(request);
  });
});
