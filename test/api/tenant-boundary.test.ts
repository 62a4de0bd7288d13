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
import { createSql } from '../../src/db';
import { postgresProxy } from '../postgres-proxy';
import {
  createMerchant,
  numberSequence,
  testApp,
  testConfig,
  testSql,
  type TestApp,
  type TestMerchant,
} from '../helpers';

let ctx: TestApp;
let first: TestMerchant;
let second: TestMerchant;
const sql = testSql();
const nextNumber = numberSequence('+256775');

/**
 * Tables outside the row-level policies, each with why. Catalogs hold no organization's data and no
 * subscriber's number: every organization reads them as they are.
 */
const CATALOGS = ['bill_services', 'currencies', 'electricity_billers', 'pin_bundles'];

/**
 * Tables that hold an organization's data or a subscriber's number without an organization_id to
 * guard them by, read and written only by the connecting role (the worker and its activities, the
 * sweeps, the operators' callbacks before any organization is known, the console's sign-in before a
 * session exists, the admission of a request before its organization is named, the admin commands):
 * the tenant role has no privilege on them at all (migrations 023, 029 and 030).
 */
const WITHHELD_FROM_THE_TENANT: Record<string, string> = {
  network_credentials: "the operators' callback credentials",
  network_operations: "the operation journal: every organization's prompts and payouts, with the subscribers' numbers",
  network_route_outcomes: "the routes' health, the service's own bookkeeping",
  network_routes: "the routes' health, the service's own bookkeeping",
  request_counters: "the throttle's counts, keyed by organization (taken before a request's organization is named)",
  sandbox_messages: "the sandbox network's text messages to subscribers' numbers (the worker's)",
  sandbox_payments: "the sandbox network's payments from subscribers' numbers (the worker's)",
  sandbox_payouts: "the sandbox network's payouts to subscribers' numbers (the worker's)",
  sandbox_rejections: "the sandbox network's refused payments (the worker's)",
  schema_migrations: 'the migrations applied',
  sign_in_attempts: "the console's sign-in throttle, keyed by email address and client address (before any session)",
  sweep_failures: "the sweeps' failures, naming every organization's rows (the worker's and the admin's)",
};

const OUTSIDE_THE_BOUNDARY = [...CATALOGS, ...Object.keys(WITHHELD_FROM_THE_TENANT)];

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
    // A new table is either guarded or named here: a catalog, or withheld from the tenant with why.
    expect(all.filter((table) => !guarded.includes(table)).sort()).toEqual([...OUTSIDE_THE_BOUNDARY].sort());
  });

  test("a table outside the policies that holds organizations' data or subscribers' numbers is withheld from the tenant role", async () => {
    const privileges = await sql<{ relname: string; privileges: string[] }[]>`
      select c.relname, array_remove(array[
        case when has_table_privilege(${TENANT_ROLE}, c.oid, 'select') then 'select' end,
        case when has_table_privilege(${TENANT_ROLE}, c.oid, 'insert') then 'insert' end,
        case when has_table_privilege(${TENANT_ROLE}, c.oid, 'update') then 'update' end,
        case when has_table_privilege(${TENANT_ROLE}, c.oid, 'delete') then 'delete' end,
        case when has_any_column_privilege(${TENANT_ROLE}, c.oid, 'select') then 'select (columns)' end
      ], null) as privileges
      from pg_class c
      where c.relnamespace = 'public'::regnamespace and c.relkind = 'r' and c.relname in ${sql(Object.keys(WITHHELD_FROM_THE_TENANT))}
      order by 1`;
    expect(privileges.map((row) => ({ table: row.relname, privileges: row.privileges }))).toEqual(
      Object.keys(WITHHELD_FROM_THE_TENANT)
        .sort()
        .map((table) => ({ table, privileges: [] })),
    );
    // As an organization: each read is refused outright, not answered with rows.
    for (const table of Object.keys(WITHHELD_FROM_THE_TENANT)) {
      const outcome = await asOrganization(first.organization.id, () =>
        sql`select count(*) from ${sql(table)}`.then(
          () => 'read',
          (error: { code?: string }) => error.code,
        ),
      );
      expect({ table, outcome }).toEqual({ table, outcome: '42501' });
    }
  });

  test("a catalog holds no organization's data and no subscriber's number", async () => {
    const columns = await sql<{ relname: string; attname: string }[]>`
      select c.relname, a.attname from pg_class c join pg_attribute a on a.attrelid = c.oid
      where c.relnamespace = 'public'::regnamespace and c.relname in ${sql(CATALOGS)} and a.attnum > 0
        and not a.attisdropped and (a.attname like '%organization%' or a.attname like '%phone%')`;
    expect([...columns]).toEqual([]);
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

  test("a connection lost while a transaction's scope is unanswered: the transaction fails to its caller, nothing else rejects", async () => {
    // The scope is pipelined after `begin` (src/db/tenancy.ts, scopedBegin): a connection lost before its answer must
    // fail the transaction, never reject where nobody listens (Bun's runner fails the test on any such rejection).
    // The answer to `begin` passes; the connection is cut at the next answer, so the statements pipelined after it are
    // sent and never answered.
    let began = false;
    let cut = false;
    const proxy = await postgresProxy(new URL(testConfig().databaseUrl), (chunk, direction) => {
      if (direction === 'to server') return 'pass';
      if (began) {
        cut = true;
        return 'cut';
      }
      began = chunk.includes('BEGIN\0');
      return 'pass';
    });
    const lossy = createSql(proxy.url, 1);
    try {
      const outcome = await asOrganization(first.organization.id, () =>
        lossy
          .begin(async (tx) => await tx`select 1`)
          .then(
            () => 'committed',
            (error: unknown) => (error as { code?: string }).code,
          ),
      );
      expect(outcome).toBe('CONNECTION_CLOSED');
      expect(cut).toBe(true);
      // Time for a rejection nobody listens to to reach the runner.
      await Bun.sleep(50);
    } finally {
      proxy.close();
      await lossy.end({ timeout: 1 });
    }
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
