/**
 * The exactly-once checker's world: the simulators of all five operators on loopback, the service
 * (API, worker, Temporal, PostgreSQL) wired to them as test/networks/stack.ts wires one, and the
 * levers a schedule pulls: a subscriber's behaviour on every route of its network, and an
 * operator's timing of one call (`late`), taken under a lock per operator path so that the rule a
 * schedule sets is met by that schedule's call, not by another one in flight at the same moment.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fundWallet } from '../../src/services/merchants/organizations';
import { ROOT, createMerchant, testSql, type TestMerchant } from '../helpers';
import { startStack, type Stack } from '../networks/stack';
import { startAirtelSimulator, type AirtelSimulator } from '../simulators/airtel';
import { startDarajaSimulator, type DarajaSimulator } from '../simulators/daraja';
import { startMomoSimulator, type MomoSimulator } from '../simulators/momo';
import type { LateAnswer } from '../simulators/outage';
import { startPawapaySimulator, type PawapaySimulator } from '../simulators/pawapay';
import { SIMULATOR_CREDENTIALS, simulatorEnvironment } from '../simulators/run';
import { startVodacomSimulator, type VodacomSimulator } from '../simulators/vodacom';
import { MERCHANTS, type Route, type Schedule, type Timing, isOnTime } from './schedule';

/** One completed or refused paybill payment a schedule made, with the merchant its reference names (null: none). */
export type PaybillRecord = {
  phone: string;
  transId: string;
  amount: number;
  completed: boolean;
  /** The organization whose bill reference it carried; null when it named none of ours. */
  intended: number | null;
};

export type World = {
  stack: Stack;
  daraja: DarajaSimulator;
  momo: MomoSimulator;
  airtel: AirtelSimulator;
  vodacom: VodacomSimulator;
  pawapay: PawapaySimulator;
  /** The service's operator timeout, and the in-flight window it was given (null: the service has neither setting yet). */
  timeoutMs: number;
  windowSeconds: number | null;
  paybills: PaybillRecord[];
  stop(): Promise<void>;
};

/** Whether the service reads OPERATOR_TIMEOUT_MS (src/config.ts): until it does, operators are waited for 20 s. */
export function serviceHasOperatorTimeout(): boolean {
  return readFileSync(join(ROOT, 'src/config.ts'), 'utf8').includes('OPERATOR_TIMEOUT_MS');
}

export const SCALED_TIMEOUT_MS = 800;
export const SCALED_WINDOW_SECONDS = 5;

export async function startWorld(): Promise<World> {
  const scaled = serviceHasOperatorTimeout();
  const credentials = SIMULATOR_CREDENTIALS;
  const daraja = await startDarajaSimulator({
    credentials: credentials.daraja,
    decisionDelayMs: 300,
    callbackDelayMs: 50,
    // Daraja documents transaction status by receipt only: a push whose callback is lost is credited without one.
    checkoutRequestLookup: 'refused',
  });
  const momo = await startMomoSimulator({
    ...credentials.momo,
    targetEnvironment: 'sandbox',
    decisionDelayMs: 300,
    callbackDelayMs: 50,
  });
  const airtel = await startAirtelSimulator({
    ...credentials.airtel,
    countries: { UG: 'UGX', TZ: 'TZS' },
    decisionDelayMs: 300,
    callbackDelayMs: 50,
    tokenLifetimeSeconds: 3600,
  });
  const { activationSeconds: _activation, ...vodacomCredentials } = credentials.vodacom;
  const vodacom = await startVodacomSimulator({
    ...vodacomCredentials,
    markets: { TZN: ['TZS'] },
    activationMs: 1000,
    decisionDelayMs: 200,
  });
  const pawapay = await startPawapaySimulator({
    apiToken: credentials.pawapay.apiToken,
    decisionDelayMs: 200,
    callbackDelayMs: 20,
  });
  const env = {
    ...simulatorEnvironment(daraja.url, momo.url, airtel.url, vodacom, pawapay.url),
    AIRTEL_COUNTRIES: 'UG,TZ',
    VODACOM_MARKETS: 'TZN',
    VODACOM_SESSION_ACTIVATION_SECONDS: '1',
    // Tigo Tanzania through pawaPay alone; MTN Uganda and Airtel Tanzania with two roads.
    PAWAPAY_PROVIDERS: 'TIGO_TZA,MTN_MOMO_UGA,AIRTEL_TZA',
    MPESA_VALIDATION_TIMEOUT_MS: '2000',
    ...(scaled
      ? {
          OPERATOR_TIMEOUT_MS: String(SCALED_TIMEOUT_MS),
          OPERATOR_IN_FLIGHT_WINDOW_SECONDS: String(SCALED_WINDOW_SECONDS),
        }
      : {}),
  };
  const stack = await startStack('money', env);
  airtel.setCallbackUrl(`${stack.env.PUBLIC_BASE_URL}/network/airtel/callback`);
  pawapay.setCallbackBase(stack.env.PUBLIC_BASE_URL!);
  return {
    stack,
    daraja,
    momo,
    airtel,
    vodacom,
    pawapay,
    timeoutMs: scaled ? SCALED_TIMEOUT_MS : 20_000,
    windowSeconds: scaled ? SCALED_WINDOW_SECONDS : null,
    paybills: [],
    async stop() {
      await stack.stop();
      await Promise.all([daraja.stop(), momo.stop(), airtel.stop(), vodacom.stop(), pawapay.stop()]);
    },
  };
}

/** A batch's merchants, each with a wallet in every currency the networks take. */
export async function merchantsOf(world: World): Promise<TestMerchant[]> {
  const merchants: TestMerchant[] = [];
  for (let i = 0; i < MERCHANTS; i += 1) {
    const merchant = await createMerchant(world.stack.ctx.app);
    for (const currency of ['KES', 'UGX', 'TZS'] as const)
      await fundWallet(testSql(), merchant.organization.id, currency, '10000000');
    merchants.push(merchant);
  }
  return merchants;
}

export type Operation = 'collect' | 'payout' | 'reversal';
type Target = { method: string; path: string | RegExp };

/** The call that starts each operation at each operator (what a timing rule holds). */
const TARGETS: Record<Route, Record<Operation, Target>> = {
  daraja: {
    collect: { method: 'POST', path: '/mpesa/stkpush/v1/processrequest' },
    payout: { method: 'POST', path: '/mpesa/b2c/v3/paymentrequest' },
    reversal: { method: 'POST', path: '/mpesa/reversal/v1/request' },
  },
  momo: {
    collect: { method: 'POST', path: '/collection/v1_0/requesttopay' },
    payout: { method: 'POST', path: '/disbursement/v1_0/transfer' },
    // MoMo sends a collection back as a transfer (docs/going-live.md).
    reversal: { method: 'POST', path: '/disbursement/v1_0/transfer' },
  },
  airtel: {
    collect: { method: 'POST', path: /^\/merchant\/v1\/payments\/?$/ },
    payout: { method: 'POST', path: /^\/standard\/v2\/disbursements\/?$/ },
    reversal: { method: 'POST', path: /^\/standard\/v1\/payments\/refund\/?$/ },
  },
  vodacom: {
    collect: { method: 'POST', path: /\/c2bPayment\/singleStage\/?$/ },
    payout: { method: 'POST', path: /\/b2cPayment\/?$/ },
    reversal: { method: 'PUT', path: /\/reversal\/?$/ },
  },
  pawapay: {
    collect: { method: 'POST', path: '/v2/deposits' },
    payout: { method: 'POST', path: '/v2/payouts' },
    reversal: { method: 'POST', path: '/v2/refunds' },
  },
};

export const simulatorOf = (world: World, route: Route) => world[route];

/** The simulator's rule for a timing: holds are scaled on the service's operator timeout. */
export function lateRule(world: World, target: Target, timing: Timing, hold: number): LateAnswer {
  const holdMs =
    timing.answer === 'at-once' ? 0 : timing.answer === 'after-timeout' ? world.timeoutMs + hold : world.timeoutMs * 3;
  return { ...target, holdMs, process: timing.process, answer: timing.reply };
}

const locks = new Map<string, Promise<void>>();

/** Runs `body` alone among the holders of `key`. */
async function exclusively<T>(key: string, body: () => Promise<T>): Promise<T> {
  const before = locks.get(key) ?? Promise.resolve();
  let release: () => void = () => {};
  const mine = new Promise<void>((resolve) => (release = resolve));
  const chained = before.then(() => mine);
  locks.set(key, chained);
  await before;
  try {
    return await body();
  } finally {
    release();
    if (locks.get(key) === chained) locks.delete(key);
  }
}

/** How long a lock waits for its operation's first send before it lets the next schedule go. */
const SEND_WAIT_MS = 4_000;

/**
 * Starts an operation (`start` returns the id of the workflow that sends it) with `timing` on its
 * route's call. The lock is held until the operation's journal has an entry (the call is then on
 * its way) or a few seconds passed (the worker is down): a schedule's rule meets its own call.
 */
export async function timed(
  world: World,
  operation: Operation,
  route: Route,
  timing: Timing,
  hold: number,
  start: () => Promise<string>,
): Promise<string> {
  const target = TARGETS[route][operation];
  return await exclusively(`${route} ${target.method} ${String(target.path)}`, async () => {
    if (!isOnTime(timing)) simulatorOf(world, route).late(lateRule(world, target, timing, hold));
    const workflowId = await start();
    const deadline = Date.now() + SEND_WAIT_MS;
    while (Date.now() < deadline) {
      const [sent] = await testSql()<{ id: number }[]>`
        select id from network_operations where workflow_id = ${workflowId} limit 1`;
      if (sent) break;
      await Bun.sleep(100);
    }
    await Bun.sleep(150);
    return workflowId;
  });
}

/** The subscriber's behaviour on every route of the schedule's network (a phone serves one schedule). */
export function scriptSubscriber(world: World, schedule: Schedule, phone: string): void {
  const digits = phone.slice(1);
  const national = phone.slice(4);
  const ok = schedule.succeeds || schedule.kind === 'reversal' || schedule.kind === 'paybill';
  const late = schedule.callback === 'late' ? { decideAfterMs: 2_500 } : {};
  const told = schedule.callback === 'late' ? 'truthful' : schedule.callback;
  const payingOut = schedule.kind === 'payout';
  for (const route of schedule.network.routes) {
    if (route === 'daraja') {
      world.daraja.subscriber(digits, {
        outcome: ok ? 'pay' : 'cancel',
        callback: told,
        ...(schedule.callback === 'late' ? { callbackAfterMs: 2_500 } : {}),
      });
      world.daraja.payee(digits, {
        outcome: schedule.succeeds ? 'complete' : 'fail',
        callback: told === 'twice' ? 'truthful' : told,
      });
    } else if (route === 'momo') {
      world.momo.party(digits, { outcome: ok ? 'SUCCESSFUL' : 'FAILED', callback: told, ...late });
    } else if (route === 'airtel') {
      world.airtel.subscriber(national, {
        outcome: ok ? 'pays' : 'declines',
        callback: told,
        registered: ok || !payingOut,
        ...late,
      });
    } else if (route === 'vodacom') {
      world.vodacom.subscriber(digits, {
        outcome: ok ? 'pays' : 'cancels',
        answer: 'on-time',
        registered: ok || !payingOut,
      });
    } else {
      world.pawapay.setSubscriber(digits, {
        deposit: ok ? 'pays' : 'declines',
        payout: ok ? 'receives' : 'fails',
        callback: told === 'none' ? 'none' : told === 'twice' ? 'twice' : 'once',
        ...late,
      });
    }
  }
}
