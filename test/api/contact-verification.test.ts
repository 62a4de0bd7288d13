import { beforeAll, describe, expect, test } from 'bun:test';
import { nameMatchScore } from '../../src/domain/name-match';
import { createMerchant, testApp, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let merchant: TestMerchant;

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
});

describe('name match score', () => {
  test.each([
    ['Jane Nakato', 'Jane Nakato', 100],
    ['NAKATO, jane', 'Jane Nakato', 100],
    ['Jane Nakatto', 'Jane Nakato', 92],
    ['Peter Pan', 'Jane Nakato', 27],
  ])('%p vs %p', (a, b, score) => {
    expect(nameMatchScore(a, b)).toBe(score);
  });
});

describe('contact instant verification (metadata sync = 1)', () => {
  test('on create: the network name, registration and a score even when the name does not match', async () => {
    const response = await merchant.request('/api/contacts', {
      form: { phone_number: '+256772123456', first_name: 'Janet', last_name: 'Nakato', 'metadata.sync': '1' },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      phone_is_supported: 'yes',
      phone_is_mm_registered: 'yes',
      name_on_network: 'Jane Nakato',
      name_matches_network_status: 'checked',
      network_name: 'MTN Uganda',
      national_id_type: 'NATIONAL_ID',
    });
    expect(response.body.name_matches_network_score).toBeGreaterThan(80);
    expect(response.body.name_matches_network_score).toBeLessThan(100);
  });

  test('on read, with sync=1 as JSON number metadata or query; without it no verification fields', async () => {
    const plain = await merchant.request('/api/contacts', {
      body: { phone_number: '+254712345678', first_name: 'Peter', last_name: 'Otieno' },
    });
    expect(plain.body.name_on_network).toBeUndefined();
    const read = await merchant.request(`/api/contacts/${plain.body.id}?metadata.sync=1`);
    expect(read.body).toMatchObject({
      name_on_network: 'John Kamau',
      network_name: 'Safaricom',
      phone_is_mm_registered: 'yes',
    });
    expect(read.body.name_matches_network_score).toBeLessThan(50);
    // Once verified, the fields stay on the contact.
    expect((await merchant.request(`/api/contacts/${plain.body.id}`)).body.name_on_network).toBe('John Kamau');
    const json = await merchant.request('/api/contacts', {
      body: { phone_number: '+250788123456', first_name: 'Aline', last_name: 'Uwase', metadata: { sync: 1 } },
    });
    expect(json.body.name_matches_network_score).toBe(100);
  });

  test('a number not in the network directory, and a network without look-ups', async () => {
    const unknown = await merchant.request('/api/contacts', {
      form: { phone_number: '+256772999111', first_name: 'A', last_name: 'B', 'metadata[sync]': '1' },
    });
    expect(unknown.body).toMatchObject({
      phone_is_supported: 'yes',
      phone_is_mm_registered: 'no',
      name_matches_network_status: 'not_registered',
      name_matches_network_score: 0,
    });
    const unsupported = await merchant.request('/api/contacts', {
      form: { phone_number: '+254733123456', first_name: 'A', last_name: 'B', 'metadata.sync': '1' },
    });
    expect(unsupported.body).toMatchObject({
      phone_is_supported: 'no',
      name_matches_network_status: 'not_supported',
      network_name: 'Airtel Kenya',
    });
  });
});
