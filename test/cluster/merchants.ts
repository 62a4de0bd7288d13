/**
 * The merchants node: the load a schedule runs under, sent through the load balancer as merchants'
 * servers send it, and the merchants' webhook receivers (HTTPS, the cluster's own certificate).
 * Run in the merchants namespace by the fault runner (main.ts), one process per schedule; it reads
 * commands as JSON lines on stdin and answers on stdout:
 *   {"cmd": "start"}   begin the steady flow: every tick one operation, in turn a collection
 *                      request, a payout, a paybill payment and a collection that is then reversed;
 *   {"cmd": "stop"}    send nothing new, let the operations in flight finish (bounded), answer
 *                      {"stopped": true};
 *   {"cmd": "report"}  answer {"report": …}: every operation and every response, and the event ids
 *                      each webhook received.
 * A merchant retries a write that got no answer, a 502/504 or a 503, with the same
 * Duplicate-Check-Key, after Retry-After, for at most two minutes; a 409 on a retry means the first
 * attempt was created (looked up later by its number). Every status a merchant saw is counted.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { PaybillOutcome } from '../simulators/daraja';

export type MerchantConfig = { organizationId: number; apiKey: string };
export type LoadConfig = {
  lbUrl: string;
  controlUrl: string;
  receiverHost: string;
  receiverPort: number;
  certFile: string;
  keyFile: string;
  merchants: MerchantConfig[];
  /** Operations started per second. */
  rate: number;
  /** Digits that make this schedule's subscriber numbers its own. */
  numberPrefix: string;
  /** Only collection requests (the throughput measurement's lifecycles), instead of the mix. */
  collectOnly?: boolean;
};

export type Kind = 'collect' | 'payout' | 'paybill' | 'reversal';
export type Operation = {
  kind: Kind;
  phone: string;
  currency: string;
  amount: number;
  organizationId: number;
  /** Status codes of every attempt of every call, in order (0: no answer). */
  statuses: number[];
  /** The longest any attempt waited for its answer, in ms. */
  slowestMs: number;
  /** The ids the API gave (collection request, payment, reversal). */
  ids: Record<string, number>;
  /** The Daraja receipt of a paybill payment and whether M-Pesa completed it. */
  paybill?: { transId: string; completed: boolean; delivery: string };
  /** What the merchant saw in the end: created, refused (4xx), gave up, or a step it could not take. */
  outcome: string;
};

/** A network each operation is sent to in turn, with a number pattern its prefix accepts. */
const NETWORKS = [
  { currency: 'KES', prefix: '+254712', paybill: true },
  { currency: 'UGX', prefix: '+256772' },
  { currency: 'UGX', prefix: '+256701' },
  { currency: 'GHS', prefix: '+233241' },
  { currency: 'TZS', prefix: '+255741' },
  { currency: 'TZS', prefix: '+255651' },
] as const;

/** Digits after a network's prefix: the schedule's own, then the operation's count. */
const SUFFIX_DIGITS = 6;
const RETRY_FOR_MS = 120_000;
const CALL_TIMEOUT_MS = 70_000;

function form(body: Record<string, string>): URLSearchParams {
  return new URLSearchParams(body);
}

async function call(
  config: LoadConfig,
  operation: Operation,
  merchant: MerchantConfig,
  method: string,
  path: string,
  body?: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const key = crypto.randomUUID();
  const deadline = Date.now() + RETRY_FOR_MS;
  for (;;) {
    let status = 0;
    let json: Record<string, unknown> = {};
    let retryAfter = 1;
    const started = Date.now();
    try {
      const response = await fetch(`${config.lbUrl}${path}`, {
        method,
        headers: {
          Authorization: `Token ${merchant.apiKey}`,
          ...(method === 'POST' ? { 'Duplicate-Check-Key': key } : {}),
        },
        ...(body ? { body: form(body) } : {}),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      status = response.status;
      retryAfter = Number(response.headers.get('retry-after') ?? 1) || 1;
      json = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    } catch {
      status = 0;
    }
    operation.statuses.push(status);
    operation.slowestMs = Math.max(operation.slowestMs, Date.now() - started);
    const transient = status === 0 || status === 502 || status === 503 || status === 504;
    if (!transient || Date.now() + retryAfter * 1000 > deadline) return { status, json };
    await Bun.sleep(Math.min(retryAfter, 5) * 1000);
  }
}

/** A created object's id, or null: a 409 on a retry means an earlier attempt created it. */
function created(result: { status: number; json: Record<string, unknown> }, operation: Operation, name: string) {
  if (result.status === 201 || result.status === 200) {
    operation.ids[name] = Number(result.json.id);
    return Number(result.json.id);
  }
  operation.outcome =
    result.status === 409 && operation.statuses.length > 1
      ? `${name} created by an unanswered attempt`
      : `${name}: ${result.status} ${JSON.stringify(result.json).slice(0, 200)}`;
  return null;
}

async function collect(config: LoadConfig, operation: Operation, merchant: MerchantConfig, send = true) {
  const result = await call(config, operation, merchant, 'POST', '/api/collectionrequests', {
    phonenumber: operation.phone,
    amount: String(operation.amount),
    currency: operation.currency,
    send_instructions: String(send),
    expiry_date: '2 minutes',
  });
  const id = created(result, operation, 'collectionrequest');
  return id === null ? null : { id, svccode: String(result.json.svccode ?? '') };
}

/** Waits (bounded) for a collection request to end; returns its collection's id when it was paid. */
async function paidCollection(config: LoadConfig, operation: Operation, merchant: MerchantConfig, id: number) {
  const until = Date.now() + 180_000;
  while (Date.now() < until) {
    const result = await call(config, operation, merchant, 'GET', `/api/collectionrequests/${id}`);
    const status = String(result.json.status ?? '');
    if (status === 'successful') {
      const collection = result.json.collection as number | { id: number } | null | undefined;
      return typeof collection === 'object' && collection !== null ? collection.id : (collection ?? null);
    }
    if (['failed', 'expired', 'cancelled'].includes(status)) return null;
    await Bun.sleep(2000);
  }
  return null;
}

async function runOperation(config: LoadConfig, operation: Operation, merchant: MerchantConfig) {
  if (operation.kind === 'collect') {
    if ((await collect(config, operation, merchant)) !== null) operation.outcome = 'created';
    return;
  }
  if (operation.kind === 'payout') {
    const result = await call(config, operation, merchant, 'POST', '/api/payments', {
      description: 'Cluster payout',
      phonenumber: operation.phone,
      amount: String(operation.amount),
      currency: operation.currency,
    });
    if (created(result, operation, 'payment') !== null) operation.outcome = 'created';
    return;
  }
  if (operation.kind === 'paybill') {
    const request = await collect(config, operation, merchant, false);
    if (!request) return;
    const paid = await fetch(`${config.controlUrl}/paybill`, {
      method: 'POST',
      body: JSON.stringify({
        msisdn: operation.phone.slice(1),
        amount: String(operation.amount),
        billRefNumber: request.svccode,
      }),
    }).then((response) => response.json() as Promise<PaybillOutcome>);
    // How M-Pesa's callbacks fared, printed with an anomaly of this payment (null: no answer).
    const answered = (sent: { status: number | null; elapsedMs: number } | null) =>
      sent ? `${sent.status ?? 'no answer'} in ${sent.elapsedMs} ms` : 'not sent';
    operation.paybill = {
      transId: paid.transId,
      completed: paid.completed,
      delivery: `validation ${answered(paid.validation)}, confirmation ${answered(paid.confirmation)}`,
    };
    operation.outcome = 'created';
    return;
  }
  const request = await collect(config, operation, merchant);
  if (!request) return;
  const collection = await paidCollection(config, operation, merchant, request.id);
  if (collection === null) {
    operation.outcome = 'collection not paid, nothing to reverse';
    return;
  }
  const result = await call(config, operation, merchant, 'POST', '/api/reversals', { collection: String(collection) });
  if (created(result, operation, 'reversal') !== null) operation.outcome = 'created';
}

function startReceiver(config: LoadConfig, received: Map<string, Map<string, number>>) {
  return Bun.serve({
    hostname: config.receiverHost,
    port: config.receiverPort,
    tls: { cert: readFileSync(config.certFile, 'utf8'), key: readFileSync(config.keyFile, 'utf8') },
    async fetch(request) {
      // `webhook-id` is msg_<event id>_<webhook id>: the same for every attempt of one event to one hook.
      const [, id = '', hook = ''] = /^msg_(\d+)_(\d+)$/.exec(request.headers.get('webhook-id') ?? '') ?? [];
      await request.arrayBuffer();
      const byEvent = received.get(hook) ?? new Map<string, number>();
      received.set(hook, byEvent);
      byEvent.set(id, (byEvent.get(id) ?? 0) + 1);
      return new Response(null, { status: 204 });
    },
  });
}

async function main() {
  const config = JSON.parse(process.argv[2] ?? '{}') as LoadConfig;
  const received = new Map<string, Map<string, number>>();
  const receiver = startReceiver(config, received);
  const operations: Operation[] = [];
  const inFlight = new Set<Promise<void>>();
  let ticker: ReturnType<typeof setInterval> | null = null;
  let count = 0;
  const kinds: Kind[] = config.collectOnly
    ? ['collect']
    : ['collect', 'payout', 'paybill', 'collect', 'reversal', 'payout'];
  const tick = () => {
    // Numbers are never reused: past the last one this schedule's digits allow, nothing more is sent.
    if (String(count).length > SUFFIX_DIGITS - config.numberPrefix.length) return;
    const kind = kinds[count % kinds.length]!;
    const network = kind === 'paybill' ? NETWORKS[0] : NETWORKS[count % NETWORKS.length]!;
    const merchant = config.merchants[count % config.merchants.length]!;
    const operation: Operation = {
      kind,
      phone: `${network.prefix}${config.numberPrefix}${String(count).padStart(SUFFIX_DIGITS - config.numberPrefix.length, '0')}`,
      currency: network.currency,
      amount: 100 + ((count * 37) % 900),
      organizationId: merchant.organizationId,
      statuses: [],
      slowestMs: 0,
      ids: {},
      outcome: 'in flight',
    };
    count += 1;
    operations.push(operation);
    const work = runOperation(config, operation, merchant)
      .catch((error) => {
        operation.outcome = `merchant error: ${String(error)}`;
      })
      .finally(() => inFlight.delete(work));
    inFlight.add(work);
  };
  const say = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);
  say({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const { cmd } = JSON.parse(line) as { cmd: string };
    if (cmd === 'start') ticker ??= setInterval(tick, 1000 / config.rate);
    if (cmd === 'stop') {
      if (ticker) clearInterval(ticker);
      ticker = null;
      const bound = Bun.sleep(240_000);
      await Promise.race([Promise.all([...inFlight]), bound]);
      say({ stopped: true, inFlight: inFlight.size });
    }
    if (cmd === 'report') {
      const webhooks = Object.fromEntries([...received].map(([hook, events]) => [hook, Object.fromEntries(events)]));
      say({ report: { operations, webhooks } });
    }
    if (cmd === 'exit') break;
  }
  receiver.stop(true);
  process.exit(0);
}

if (import.meta.main) await main();
