/**
 * The exactly-once checker's driver: runs schedules in batches through the service's HTTP API
 * against the simulators, waits until every operation is final (or its deadline passed), then
 * checks the ledgers (./ledger.ts) and collects the anomalies with the seed and index that replay them.
 */
import { asId } from '../../src/domain/ids';
import { collectionRequestWorkflowId } from '../../src/contracts/collection-request';
import { incomingCollectionWorkflowId } from '../../src/contracts/incoming-collection';
import { requester, testSql, uniqueNumber, type TestMerchant } from '../helpers';
import { promptedRequest } from '../networks/stack';
import {
  type Anomaly,
  type Debit,
  type Intents,
  checkCredits,
  checkMoneyOut,
  operatorLedgers,
  serviceRecords,
} from './ledger';
import { ON_TIME, batchEventsOf, describeSchedule, scheduleOf, type BatchEvents, type Schedule } from './schedule';
import { idsOnRecord, reconcileReceipts } from './statement';
import { merchantsOf, scriptSubscriber, simulatorOf, timed, type World } from './world';

export type Finding = Anomaly & { seed: number; index: number | null; schedule: string | null };
/** A debit only the operator's statement shows, which the reconciliation listed as missing on our side. */
export type OnStatement = { phone: string; route: string; receipt: string; amount: number };
export type StatementFinding = OnStatement & { seed: number; index: number; schedule: string };
export type Ran = {
  schedule: Schedule;
  phone: string;
  intents: Intents;
  /** 'final', or what was still not final at the deadline. */
  waiting: string | null;
  note: string;
};
export type CheckResult = {
  seed: number;
  schedules: number;
  operations: Map<string, number>;
  findings: Finding[];
  /** Debits no service could know of, found by reconciliation (test/money/statement.ts): not anomalies. */
  onStatement: StatementFinding[];
  waiting: Ran[];
  durationMs: number;
};

export type CheckOptions = {
  seed: number;
  /** Schedule indexes to run (0..n-1, or the one MONEY_ONLY names). */
  indexes: number[];
  batchSize: number;
  /** How long one operation may take to be final before it is reported as waiting (or stuck). */
  deadlineMs: number;
  log?: (line: string) => void;
};

/** `pending`, or undefined once `ms` passed. */
async function within<T>(pending: Promise<T>, ms: number): Promise<T | undefined> {
  pending.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([pending, expired]);
  } finally {
    clearTimeout(timer);
  }
}

async function finalOf(world: World, workflowId: string, until: number): Promise<Record<string, unknown> | null> {
  const handle = world.stack.ctx.client.workflow.getHandle(workflowId);
  const result = await within(
    handle.result().catch((error: unknown) => ({ error: String(error) })),
    Math.max(0, until - Date.now()),
  );
  return (result as Record<string, unknown> | undefined) ?? null;
}

async function prompt(
  world: World,
  schedule: Schedule,
  merchant: TestMerchant,
  phone: string,
  timing = schedule.timing,
) {
  let requestId = 0;
  const workflowId = await timed(world, 'collect', schedule.route, timing, schedule.holdMs, async () => {
    requestId = await promptedRequest(merchant, {
      phonenumber: phone,
      amount: String(schedule.amount),
      currency: schedule.network.currency,
      // The shortest expiry the API takes: a request nobody can settle ends within the deadline.
      expiry_date: '1 minute',
    });
    return collectionRequestWorkflowId(asId('CollectionRequest', requestId));
  });
  return { requestId, workflowId };
}

async function payout(world: World, schedule: Schedule, merchant: TestMerchant, phone: string, until: number) {
  const workflowId = await timed(world, 'payout', schedule.route, schedule.timing, schedule.holdMs, async () => {
    const created = await merchant.request('/api/payments', {
      form: {
        description: 'Exactly-once payout',
        phonenumber: phone,
        amount: String(schedule.amount),
        currency: schedule.network.currency,
      },
    });
    if (created.status !== 201)
      throw new Error(`payment not created: ${created.status} ${JSON.stringify(created.body)}`);
    return `payment-${created.body.id}`;
  });
  const result = await finalOf(world, workflowId, until);
  return result ? { waiting: null, note: `payment ${String(result.state)}` } : { waiting: 'payment', note: '' };
}

async function reversal(world: World, schedule: Schedule, merchant: TestMerchant, phone: string, until: number) {
  const collected = await prompt(world, schedule, merchant, phone, ON_TIME);
  const outcome = await finalOf(world, collected.workflowId, until);
  if (!outcome) return { waiting: 'collection request before its reversal', note: '' };
  if (outcome.status !== 'successful')
    return { waiting: null, note: `collection ${String(outcome.status)}, no reversal` };
  const [taken] = await testSql()<{ route: Schedule['route'] }[]>`
    select route from network_operations where workflow_id = ${collected.workflowId} and kind = 'prompt'
      and state <> 'refused' order by id desc limit 1`;
  const route = taken?.route ?? schedule.route;
  const workflowId = await timed(world, 'reversal', route, schedule.timing, schedule.holdMs, async () => {
    const created = await merchant.request('/api/reversals', { form: { collection: String(outcome.collectionId) } });
    if (created.status !== 201)
      throw new Error(`reversal not created: ${created.status} ${JSON.stringify(created.body)}`);
    return `reversal-${created.body.id}`;
  });
  const result = await finalOf(world, workflowId, until);
  return result
    ? { waiting: null, note: `reversal on ${route} ${String(result.state)}` }
    : { waiting: `reversal on ${route}`, note: '' };
}

/** A confirmation M-Pesa never made, naming `code`: anyone can send one to the paybill's URL. */
async function forgedConfirmation(world: World, phone: string, amount: number, code: string): Promise<void> {
  const receipt = `FRG${Math.random().toString(36).slice(2, 9).toUpperCase()}`;
  await requester(world.stack.ctx.app, null)('/network/paybill/confirmation', {
    body: {
      TransactionType: 'Pay Bill',
      TransID: receipt,
      TransTime: '20261127120000',
      TransAmount: String(amount),
      BusinessShortCode: '174379',
      BillRefNumber: code,
      InvoiceNumber: '',
      OrgAccountBalance: '',
      ThirdPartyTransID: '',
      MSISDN: phone.slice(1),
      FirstName: 'Eve',
      MiddleName: '',
      LastName: '',
    },
  });
}

/** An STK push of one merchant and a paybill payment of the same number and amount (see `Paybill`). */
async function paybill(
  world: World,
  schedule: Schedule,
  merchants: TestMerchant[],
  phone: string,
  intents: Intents,
  until: number,
) {
  const asker = merchants[schedule.merchant]!;
  const other = merchants[schedule.otherMerchant]!;
  const lookAlike = await other.request('/api/collectionrequests', {
    form: { phonenumber: phone, amount: String(schedule.amount), currency: 'KES', send_instructions: 'false' },
  });
  const code = lookAlike.body.svccode as string;
  const { workflowId } = await prompt(world, schedule, asker, phone);
  const asked = finalOf(world, workflowId, until);
  if (schedule.paybill!.at === 'after') await asked;
  else await Bun.sleep(schedule.holdMs);
  const reference = schedule.paybill!.reference;
  if (reference === 'forged') await forgedConfirmation(world, phone, schedule.amount, code);
  else {
    const named = reference === 'other-merchant' ? other.organization.id : null;
    const paid = await world.daraja.payBill({
      msisdn: phone.slice(1),
      amount: String(schedule.amount),
      billRefNumber: reference === 'other-merchant' ? code : `UNKNOWN${schedule.index}`,
    });
    world.paybills.push({
      phone,
      transId: paid.transId,
      amount: schedule.amount,
      completed: paid.completed,
      intended: named,
    });
    intents.paybills.set(paid.transId, named);
    if (paid.completed)
      await finalOf(world, incomingCollectionWorkflowId('Safaricom', paid.transId), until).catch(() => null);
  }
  const outcome = await asked;
  return outcome
    ? { waiting: null, note: `push request ${String(outcome.status)}` }
    : { waiting: 'STK push request', note: '' };
}

async function runSchedule(
  world: World,
  merchants: TestMerchant[],
  schedule: Schedule,
  deadlineMs: number,
): Promise<Ran> {
  const phone = uniqueNumber(schedule.network.prefix);
  const merchant = merchants[schedule.merchant]!;
  const intents: Intents = { asker: merchant.organization.id, paybills: new Map() };
  scriptSubscriber(world, schedule, phone);
  const until = Date.now() + deadlineMs;
  try {
    let ran: { waiting: string | null; note: string };
    if (schedule.kind === 'payout') ran = await payout(world, schedule, merchant, phone, until);
    else if (schedule.kind === 'reversal') ran = await reversal(world, schedule, merchant, phone, until);
    else if (schedule.kind === 'paybill') ran = await paybill(world, schedule, merchants, phone, intents, until);
    else {
      const { workflowId } = await prompt(world, schedule, merchant, phone);
      const outcome = await finalOf(world, workflowId, until);
      ran = outcome ? { waiting: null, note: `request ${String(outcome.status)}` } : { waiting: 'request', note: '' };
    }
    return { schedule, phone, intents, ...ran };
  } catch (error) {
    return { schedule, phone, intents, waiting: null, note: `driver error: ${String(error)}` };
  }
}

/** The batch's worker kill and route outage, at their moments. */
function startEvents(world: World, events: BatchEvents): Promise<void>[] {
  const pending: Promise<void>[] = [];
  if (events.killAtMs !== null) {
    const at = events.killAtMs;
    pending.push(
      (async () => {
        await Bun.sleep(at);
        await world.stack.killWorker();
        await world.stack.startWorker();
      })(),
    );
  }
  if (events.outage) {
    const { route, mode, atMs, forMs } = events.outage;
    pending.push(
      (async () => {
        await Bun.sleep(atMs);
        await simulatorOf(world, route).outage(mode);
        await Bun.sleep(forMs);
        await simulatorOf(world, route).outage('none');
      })(),
    );
  }
  return pending;
}

const SIMULATORS = ['daraja', 'momo', 'airtel', 'vodacom', 'pawapay'] as const;

/**
 * The silent debits (ledger.ts `Debit.silent`) of `debits` that the service has no record of: the
 * reconciliation with M-Pesa's statement must list each as missing on our side, so that finance sees
 * it. Those it lists are returned; each it does not list is an anomaly.
 */
async function reconcileSilent(
  world: World,
  debits: Debit[],
): Promise<{ unknown: Debit[]; found: OnStatement[]; anomalies: Anomaly[] }> {
  const silent = debits.filter((debit) => debit.silent);
  const recorded = await idsOnRecord(silent.flatMap((debit) => debit.ids));
  const unknown = silent.filter((debit) => !debit.ids.some((id) => recorded.has(id)));
  if (unknown.length === 0) return { unknown, found: [], anomalies: [] };
  const receipts = unknown.map((debit) => debit.ids[0]!);
  const { listed, problems } = await reconcileReceipts(world.daraja.statement(), receipts);
  const found: OnStatement[] = [];
  const anomalies: Anomaly[] = [];
  for (const debit of unknown) {
    const receipt = debit.ids[0]!;
    if (listed.has(receipt)) found.push({ phone: debit.phone, route: debit.route, receipt, amount: debit.amount });
    else
      anomalies.push({
        phone: debit.phone,
        rule: 'a',
        text: `${debit.route} debit ${receipt} (an STK push whose answer and result callback M-Pesa never delivered; the service has no record of it) is not listed as missing on our side by the reconciliation with M-Pesa's statement${problems.length > 0 ? ` (${problems.join('; ')})` : ''}`,
      });
  }
  return { unknown, found, anomalies };
}

async function checkBatch(
  world: World,
  ran: Ran[],
  organizations: number[],
): Promise<{ anomalies: Anomaly[]; onStatement: OnStatement[] }> {
  const ledgers = operatorLedgers(world);
  const phones = ran.map((each) => each.phone);
  const records = await serviceRecords(phones, organizations);
  const checked = new Set(ran.filter((each) => each.waiting === null).map((each) => each.phone));
  const silent = await reconcileSilent(
    world,
    ledgers.debits.filter((debit) => checked.has(debit.phone)),
  );
  const anomalies: Anomaly[] = records.unbalanced.map((row) => ({
    phone: null,
    rule: 'd' as const,
    text: `account ${row.accountId} of organization ${row.organizationId}: balance ${row.balance}, transactions sum to ${row.sum}`,
  }));
  for (const each of ran) {
    const { phone } = each;
    if (each.waiting !== null) {
      // A request nobody paid stays open until its expiry, as documented: waiting, not stuck (no money at stake).
      const unpaidRequest =
        (each.schedule.kind === 'collect' || each.schedule.kind === 'paybill') &&
        !ledgers.debits.some((debit) => debit.phone === phone);
      if (!ledgers.pending.has(phone) && !unpaidRequest)
        anomalies.push({
          phone,
          rule: 'stuck',
          text: `${each.waiting} not final at the deadline, though the operators are`,
        });
      continue;
    }
    anomalies.push(
      ...checkCredits(
        phone,
        // A debit the service has no record of is judged by the reconciliation (reconcileSilent), not counted here.
        ledgers.debits.filter((debit) => debit.phone === phone && !silent.unknown.includes(debit)),
        records.collections.filter((collection) => collection.phone === phone),
        each.intents,
      ),
      ...checkMoneyOut(
        phone,
        ledgers.outs.filter((out) => out.phone === phone),
        records.moneyOut.filter((record) => record.phone === phone),
      ),
    );
  }
  anomalies.push(...silent.anomalies);
  return { anomalies, onStatement: silent.found };
}

/** How long after a batch the late calls and callbacks are given before the ledgers are compared. */
function settleMs(world: World): number {
  return Math.max(4_000, (world.windowSeconds ?? 5) * 1000 + 3 * world.timeoutMs);
}

export async function runBatch(
  world: World,
  options: CheckOptions,
  indexes: number[],
  batch: number,
): Promise<{ ran: Ran[]; anomalies: Anomaly[]; onStatement: OnStatement[] }> {
  world.paybills.length = 0;
  const merchants = await merchantsOf(world);
  const events =
    process.env.MONEY_ONLY !== undefined ? { killAtMs: null, outage: null } : batchEventsOf(options.seed, batch);
  const happenings = startEvents(world, events);
  const ran = await Promise.all(
    indexes.map((index) => runSchedule(world, merchants, scheduleOf(options.seed, index), options.deadlineMs)),
  );
  await Promise.all(happenings);
  await within(Promise.all(SIMULATORS.map((name) => world[name].settled())), 30_000);
  await Bun.sleep(settleMs(world));
  const organizations = merchants.map((merchant) => merchant.organization.id);
  let checked = await checkBatch(world, ran, organizations);
  if (checked.anomalies.length > 0) {
    // A second look a while later: only what stays wrong is an anomaly, never a credit still on its way.
    await Bun.sleep(settleMs(world) * 2);
    checked = await checkBatch(world, ran, organizations);
  }
  const { anomalies, onStatement } = checked;
  for (const name of SIMULATORS) world[name].clearLate();
  if (process.env.MONEY_VERBOSE === '1')
    for (const each of ran)
      options.log?.(
        `  ${each.schedule.index} ${each.phone}: ${describeSchedule(each.schedule)} -> ${each.note || each.waiting}`,
      );
  const kill = events.killAtMs === null ? '' : `, worker killed at ${events.killAtMs} ms`;
  const outage = events.outage ? `, ${events.outage.route} ${events.outage.mode} at ${events.outage.atMs} ms` : '';
  const found = onStatement.length === 0 ? '' : `, ${onStatement.length} only on the operator's statement`;
  options.log?.(`batch ${batch}: ${ran.length} schedules${kill}${outage}: ${anomalies.length} anomalies${found}`);
  return { ran, anomalies, onStatement };
}

export async function runChecker(world: World, options: CheckOptions): Promise<CheckResult> {
  const started = Date.now();
  const findings: Finding[] = [];
  const onStatement: StatementFinding[] = [];
  const waiting: Ran[] = [];
  const operations = new Map<string, number>();
  for (let at = 0; at < options.indexes.length; at += options.batchSize) {
    const indexes = options.indexes.slice(at, at + options.batchSize);
    const {
      ran,
      anomalies,
      onStatement: found,
    } = await runBatch(world, options, indexes, Math.floor(at / options.batchSize));
    for (const each of ran) {
      const name = `${each.schedule.network.name} ${each.schedule.kind}`;
      operations.set(name, (operations.get(name) ?? 0) + 1);
      if (each.waiting !== null && !anomalies.some((anomaly) => anomaly.phone === each.phone)) waiting.push(each);
    }
    for (const anomaly of anomalies) {
      const owner = ran.find((each) => each.phone === anomaly.phone);
      findings.push({
        ...anomaly,
        seed: options.seed,
        index: owner?.schedule.index ?? null,
        schedule: owner ? `${describeSchedule(owner.schedule)} (${owner.note || owner.waiting})` : null,
      });
    }
    for (const debit of found) {
      const owner = ran.find((each) => each.phone === debit.phone)!;
      onStatement.push({
        ...debit,
        seed: options.seed,
        index: owner.schedule.index,
        schedule: `${describeSchedule(owner.schedule)} (${owner.note})`,
      });
    }
  }
  return {
    seed: options.seed,
    schedules: options.indexes.length,
    operations,
    findings,
    onStatement,
    waiting,
    durationMs: Date.now() - started,
  };
}
