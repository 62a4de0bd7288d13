/**
 * The tenant boundary in PostgreSQL (migrations/023_row_level_security.sql, src/db/tenancy.ts):
 * every table holding an organization's rows has a policy; a statement with no organization
 * predicate at all, run in an organization's scope, reads, changes and deletes nothing of another
 * organization's and cannot write a row for it; scopes never leak between statements sharing the
 * pool's connections, even under concurrency and failures.
 */
import { asId } from '../../src/domain/ids';
import { beforeAll, describe, expect, test } from 'bun:test';
import { asOrganization, TENANT_ROLE } from '../../src/db/tenancy';
import { createMerchant, numberSequence, testApp, testSql, type TestApp, type TestMerchant } from '../helpers';

let ctx: TestApp;
let first: TestMerchant;
let second: TestMerchant;
const sql = testSql();
const nextNumber = numberSequence('+256775');

/** Tables that hold no organization's rows: catalogs, the simulated network's state, counters and the service's own bookkeeping. */
const OUTSIDE_THE_BOUNDARY = [
  'bill_services',
  'currencies',
  'electricity_billers',
  'network_credentials',
  'network_operations',
  'network_route_outcomes',
  'network_routes',
  'pin_bundles',
  'request_counters',
  'sandbox_messages',
  'sandbox_payments',
  'sandbox_payouts',
  'sandbox_rejections',
  'schema_migrations',
  'sign_in_attempts',
  'sweep_failures',
];

/** Rows of each guarded table: an organization's own (by its column or through its parent). */
const OWNED = {
  organizations: 'id',
  transactions: 'account_id in (select id from accounts where organization_id = $1)',
  payment_batch_rows: 'batch_id in (select id from payment_batches where organization_id = $1)',
  webhook_delivery_attempts: 'delivery_id in (select id from webhook_deliveries where organization_id = $1)',
  console_sessions: 'user_id in (select id from users where organization_id = $1)',
  // A receiver is shared by every organization with a webhook to it: each sees it through its own webhooks.
  webhook_receivers: 'origin in (select receiver from webhooks where organization_id = $1)',
} as Record<string, string>;
const ownedBy = (table: string): string =>
  OWNED[table] === 'id' ? 'id = $1' : (OWNED[table] ?? 'organization_id = $1');

async function guardedTables(): Promise<string[]> {
  const rows = await sql<{ relname: string }[]>`
    select c.relname from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and c.relrowsecurity
      and exists (select 1 from pg_policies p where p.tablename = c.relname and ${TENANT_ROLE} = any (p.roles))
    order by 1`;
  return rows.map((row) => row.relname);
}

/** Something of each kind for a merchant: a contact, a request, a payment, a webhook and its delivery, a batch. */
async function populate(merchant: TestMerchant): Promise<void> {
  const phonenumber = nextNumber();
  expect(
    (
      await merchant.request('/api/webhooks', {
        body: { event: 'contact.created', target: 'https://boundary.example/hook' },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await merchant.request('/api/contacts', {
        body: { phone_number: phonenumber, first_name: 'Bound', last_name: 'Ary' },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await merchant.request('/api/collectionrequests', {
        body: { phonenumber, amount: '5', currency: 'BXC', reason: 'boundary' },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await merchant.request('/api/payments', {
        form: { phonenumber: nextNumber(), amount: '2', currency: 'BXC', description: 'boundary' },
      })
    ).status,
  ).toBe(201);
  const batch = await merchant.request('/api/payment-batches', {
    body: { payments: [{ phonenumber: nextNumber(), amount: '1', currency: 'BXC', description: 'boundary' }] },
  });
  expect([201, 202]).toContain(batch.status);
}

beforeAll(async () => {
  ctx = await testApp();
  [first, second] = [await createMerchant(ctx.app), await createMerchant(ctx.app)];
  await Promise.all([populate(first), populate(second)]);
});

describe('the tenant boundary', () => {
  test('every table with organization_id, and every table that belongs to one through its parent, has the tenant policy; the rest are named', async () => {
    const all = (
      await sql<
        { relname: string }[]
      >`select relname from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r' order by 1`
    ).map((row) => row.relname);
    const guarded = await guardedTables();
    const withColumn = (
      await sql<{ relname: string }[]>`
      select c.relname from pg_class c join pg_attribute a on a.attrelid = c.oid
      where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and a.attname = 'organization_id' and not a.attisdropped`
    ).map((row) => row.relname);
    for (const table of [...withColumn, ...Object.keys(OWNED)])
      expect({ table, guarded: guarded.includes(table) }).toEqual({ table, guarded: true });
    // A new table is either guarded or named here, with why it holds no organization's rows.
    expect(all.filter((table) => !guarded.includes(table)).sort()).toEqual([...OUTSIDE_THE_BOUNDARY].sort());
  });

  test('with no predicate at all, an organization reads only its own rows of every guarded table', async () => {
    const heldByBoth: string[] = [];
    for (const table of await guardedTables()) {
      const own = (
        await sql.unsafe(`select count(*)::int as count from ${table} where ${ownedBy(table)}`, [first.organization.id])
      )[0]!.count as number;
      const theirs = (
        await sql.unsafe(`select count(*)::int as count from ${table} where ${ownedBy(table)}`, [
          second.organization.id,
        ])
      )[0]!.count as number;
      const seen = await asOrganization(first.organization.id, async () => {
        const [row] = await sql<
          { count: number; role: string }[]
        >`select count(*)::int as count, current_user as role from ${sql(table)}`;
        return row!;
      });
      expect({ table, seen: seen.count, role: seen.role }).toEqual({ table, seen: own, role: TENANT_ROLE });
      if (theirs > 0 && own > 0) heldByBoth.push(table);
    }
    // The other organization had rows to leak in each table its requests wrote.
    expect(heldByBoth).toEqual(
      expect.arrayContaining([
        'accounts',
        'api_keys',
        'audit_events',
        'collection_requests',
        'contacts',
        'events',
        'organizations',
        'payment_batch_rows',
        'payment_batches',
        'payments',
        'transactions',
        'users',
        'webhook_deliveries',
        'webhooks',
      ]),
    );
  });

  test("an organization changes, deletes and writes nothing of another's, in statements or transactions", async () => {
    const [theirContact] = await sql<
      { id: number }[]
    >`select id from contacts where organization_id = ${second.organization.id} limit 1`;
    const [theirWallet] = await sql<
      { id: number; balance: string }[]
    >`select id, balance::text from accounts where organization_id = ${second.organization.id} limit 1`;
    await asOrganization(first.organization.id, async () => {
      expect((await sql`update contacts set first_name = 'Taken' where id = ${theirContact!.id}`).count).toBe(0);
      expect((await sql`delete from contacts where id = ${theirContact!.id}`).count).toBe(0);
      const ownContacts = (await sql`select id from contacts`).count;
      expect((await sql`update contacts set first_name = first_name`).count).toBe(ownContacts);
      const insert = sql`insert into contacts (organization_id, phone_number, first_name, last_name) values (${second.organization.id}, ${nextNumber()}, 'In', 'Truder')`;
      expect(
        await insert.then(
          () => 'written',
          (error: { code?: string }) => error.code,
        ),
      ).toBe('42501');
      const inTransaction = await sql.begin(
        async (tx) => (await tx`update accounts set balance = balance + 1 where id = ${theirWallet!.id}`).count,
      );
      expect(inTransaction).toBe(0);
    });
    const [after] = await sql<{ balance: string }[]>`select balance::text from accounts where id = ${theirWallet!.id}`;
    expect(after!.balance).toBe(theirWallet!.balance);
  });

  test("concurrent statements of two organizations and of the connecting role never see each other's scope", async () => {
    const probe = (organizationId: number | null) => {
      const read = () => sql<{ role: string; organizations: number[] }[]>`
        select current_user as role, coalesce(array_agg(distinct organization_id), '{}') as organizations from contacts`;
      return organizationId === null ? read() : asOrganization(asId('Organization', organizationId), read);
    };
    const plan = Array.from(
      { length: 90 },
      (_, index) => [first.organization.id, second.organization.id, null][index % 3]!,
    );
    const answers = await Promise.all(
      plan.map(async (organizationId) => ({ organizationId, answer: (await probe(organizationId))[0]! })),
    );
    for (const { organizationId, answer } of answers) {
      if (organizationId === null) {
        expect(answer.role).not.toBe(TENANT_ROLE);
        expect(answer.organizations).toEqual(expect.arrayContaining([first.organization.id, second.organization.id]));
      } else {
        expect({ role: answer.role, organizations: answer.organizations }).toEqual({
          role: TENANT_ROLE,
          organizations: [organizationId],
        });
      }
    }
  });

  test('a failed statement in a scope leaves no scope behind on its connection', async () => {
    await asOrganization(first.organization.id, async () => {
      await Promise.all(Array.from({ length: 10 }, () => sql`select 1 / 0`.catch(() => null)));
      await Promise.all(
        Array.from({ length: 10 }, () =>
          sql
            .begin(async (tx) => {
              await tx`select 1 / 0`;
            })
            .catch(() => null),
        ),
      );
    });
    const roles = await Promise.all(
      Array.from(
        { length: 10 },
        async () =>
          (
            await sql<{ role: string; organization: string | null }[]>`
      select current_user as role, nullif(current_setting('app.organization_id', true), '') as organization`
          )[0]!,
      ),
    );
    for (const row of roles) expect(row).toEqual({ role: expect.not.stringMatching(TENANT_ROLE), organization: null });
  });

  test("an API request runs as the tenant: another organization's rows stay 403 and lists hold only its own", async () => {
    const [theirs] = await sql<
      { id: number }[]
    >`select id from contacts where organization_id = ${second.organization.id} limit 1`;
    expect((await first.request(`/api/contacts/${theirs!.id}`)).status).toBe(403);
    const listed = (await first.request('/api/contacts?limit=100')).body.results as { id: number }[];
    const own = await sql<{ id: number }[]>`select id from contacts where organization_id = ${first.organization.id}`;
    expect(listed.map((contact) => contact.id).sort()).toEqual(own.map((contact) => contact.id).sort());
  });
});
