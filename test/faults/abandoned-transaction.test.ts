/**
 * A client that vanishes in the middle of a transaction, its end never heard by PostgreSQL (a
 * process killed, or a connection given up, while a partition drops its packets): the server's
 * session stays idle in its transaction, holding its row locks. The pool's sessions carry a limit
 * to that idleness (src/db/index.ts, `IDLE_TRANSACTION_TIMEOUT_MS`), so the locks come free and
 * the next writer of those rows proceeds. Without it, the cluster's schedule 10 once left every
 * later writer of one wallet waiting for minutes, and with them the workflows that wrote it.
 */
import { afterAll, expect, test } from 'bun:test';
import { IDLE_TRANSACTION_TIMEOUT_MS, createSql } from '../../src/db';
import { createOrganization } from '../../src/services/merchants/organizations';
import { testConfig, testSql } from '../helpers';
import { postgresProxy } from '../postgres-proxy';

const proxies: Awaited<ReturnType<typeof postgresProxy>>[] = [];
afterAll(() => {
  for (const proxy of proxies) proxy.close();
});

/**
 * Locks one organization's row through a pool opened with `idleTransactionMs` (0: no limit), then
 * the client vanishes, leaving the server's session open. Returns whether a writer of that row,
 * waiting at most `waitMs`, got it.
 */
async function writerAfterAVanishedClient(idleTransactionMs: number, waitMs: number): Promise<'written' | string> {
  const { organization } = await createOrganization(testSql(), 'Vanished client');
  const proxy = await postgresProxy(new URL(testConfig().databaseUrl), () => 'pass');
  proxies.push(proxy);
  const pool = createSql(proxy.url, 1, { idleTransactionMs });
  let locked = () => {};
  const holding = new Promise<void>((resolve) => (locked = resolve));
  const transaction = pool
    .begin(async (tx) => {
      await tx`select id from organizations where id = ${organization.id} for update`;
      locked();
      await new Promise(() => {});
    })
    .catch((error: { code?: string }) => error.code);
  await holding;
  proxy.abandonAll();
  expect(await transaction).toBe('CONNECTION_CLOSED');
  await pool.end({ timeout: 1 });
  return await testSql()
    .begin(async (tx) => {
      await tx`select set_config('lock_timeout', ${`${waitMs}ms`}, true)`;
      await tx`update organizations set name = 'Written after' where id = ${organization.id}`;
      return 'written';
    })
    .catch((error: { code?: string }) => String(error.code));
}

test('the session of a client that vanished inside a transaction is ended, and its row locks with it', async () => {
  const started = Date.now();
  expect(await writerAfterAVanishedClient(300, 10_000)).toBe('written');
  expect(Date.now() - started).toBeLessThan(10_000);
});

test('without that limit the vanished client holds its locks: the writer gives up (55P03, lock not available)', async () => {
  expect(await writerAfterAVanishedClient(0, 1500)).toBe('55P03');
});

test("the pool's sessions carry the limit and the server's TCP keepalives", async () => {
  const pool = createSql(testConfig().databaseUrl, 1);
  try {
    const [settings] = await pool<Record<string, string>[]>`
      select current_setting('idle_in_transaction_session_timeout') as idle,
        current_setting('tcp_keepalives_idle') as keepalive`;
    expect(settings).toEqual({ idle: `${IDLE_TRANSACTION_TIMEOUT_MS / 60_000}min`, keepalive: '30' });
  } finally {
    await pool.end({ timeout: 1 });
  }
});
