import { beforeAll, describe, expect, test } from 'bun:test';
import { createMerchant, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';
import { recordEvent } from '../../src/services/webhooks/events';

let ctx: TestApp;
let merchant: TestMerchant;
let other: TestMerchant;
const ids: number[] = [];

beforeAll(async () => {
  ctx = await testApp();
  merchant = await createMerchant(ctx.app);
  other = await createMerchant(ctx.app);
  const sql = testSql();
  for (const [index, type] of (['contact.created', 'collection.received', 'contact.created'] as const).entries()) {
    const event = await recordEvent(sql, {
      organizationId: merchant.organization.id,
      type,
      data: { n: index },
      author: null,
    });
    ids.push(event.id);
  }
});

describe('GET /api/events', () => {
  test("lists the organization's events newest first in the paged envelope", async () => {
    const response = await merchant.request('/api/events');
    expect(response.status).toBe(200);
    expect(response.body.count).toBe(3);
    expect(response.body.results.map((event: { id: number }) => event.id)).toEqual([...ids].reverse());
    expect(response.body.results[0]).toEqual({
      id: ids[2],
      organization: merchant.organization.id,
      type: 'contact.created',
      data: { n: 2 },
      created: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      modified: expect.stringMatching(/Z$/),
      author: null,
      updated_by: null,
    });
  });

  test('filters by type; an unknown type is 400 with the choice message', async () => {
    const filtered = await merchant.request('/api/events?type=collection.received');
    expect(filtered.body.results.map((event: { id: number }) => event.id)).toEqual([ids[1]]);
    const bad = await merchant.request('/api/events?type=wrongevent');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ type: ['Select a valid choice. wrongevent is not one of the available choices.'] });
  });

  test('another organization sees none of them', async () => {
    expect((await other.request('/api/events')).body.count).toBe(0);
  });
});

describe('GET /api/events/<id>', () => {
  test('returns the event; 403 for another organization; 404 when missing', async () => {
    expect((await merchant.request(`/api/events/${ids[0]}`)).body.data).toEqual({ n: 0 });
    expect((await other.request(`/api/events/${ids[0]}`)).status).toBe(403);
    expect((await merchant.request('/api/events/876543210')).status).toBe(404);
  });

  test('is read only: POST is 405', async () => {
    expect((await merchant.request('/api/events', { body: {} })).status).toBe(405);
  });
});
