/**
 * The network adapter the service uses: money on a network a connector serves goes by its routes
 * (./routes.ts: journaled, chosen by health, failing over only when nothing happened), and
 * everything else to the sandbox network: BXC always, and in sandbox mode the networks with no
 * connector while no connector is on at all. A real currency the sandbox may not move is refused by
 * the API's validation (domain/networks.ts); one that still arrives here is refused as a result.
 */
import { sandboxMoneyProblem, type Network } from '../domain/networks';
import type { Sql } from '../db';
import { logger } from '../log';
import type { RouteHealth } from '../services/networks/route-health';
import type {
  Connector,
  SandboxNetwork,
  NameLookup,
  NetworkAdapter,
  PaymentPrompt,
  Payout,
  PayoutResult,
  PromptResult,
  PromptStatus,
  ReportedPayment,
  ReportedPaymentStatus,
  TakenPrompt,
  TextMessage,
} from './adapter';
import { connectionsOf } from './registry';
import { createRoutedOperations } from './routes';

type Mover = Pick<
  SandboxNetwork,
  'requestPayment' | 'promptStatus' | 'reportedPaymentStatus' | 'sendMoney' | 'payoutStatus'
>;

/** What routes money over the connectors: the database holding the operation journal, and the routes' health. */
type Routing = { sql: Sql; health: RouteHealth };

/** What the router's texts and refusals consult: the sandbox network, and each network's direct connector. */
type RouterContext = { sandbox: SandboxNetwork; connectorOf: (network: Network) => Connector | null };

/** Why money on a network with no connector is refused. */
const noConnector = (network: Network) =>
  `${network.name} has no connector in this deployment; real money on it needs one (see docs/going-live.md).`;

/** A text message goes to the sandbox network, except on a connected operator's network (BXC aside): none is sent. */
async function sendText({ sandbox, connectorOf }: RouterContext, message: TextMessage): Promise<void> {
  if (message.currency !== 'BXC' && connectorOf(message.network) !== null) {
    // No operator API sends texts: the operator's own prompt and receipt text reach the subscriber.
    logger.info('text not sent: the operator has no text-message API', {
      requestId: message.requestId,
      kind: message.kind,
      network: message.network.name,
    });
    return;
  }
  await sandbox.sendSms(message);
}

/**
 * A merchant's refusal of a payment goes to the sandbox network, except on a connected operator's network (BXC aside):
 * it is only logged.
 */
async function refusePayment(
  { sandbox, connectorOf }: RouterContext,
  rejection: Parameters<NetworkAdapter['rejectPayment']>[0],
): Promise<void> {
  if (connectorOf(rejection.network) !== null && rejection.currency !== 'BXC') {
    logger.warn('a connected operator has no API to refuse a completed payment', {
      network: rejection.network.name,
      remoteTransactionId: rejection.remoteTransactionId,
    });
    return;
  }
  await sandbox.rejectPayment(rejection);
}

export function createNetworkRouter(
  sandbox: SandboxNetwork,
  connectors: readonly Connector[],
  sandboxMode: boolean,
  routing: Routing,
): NetworkAdapter {
  const routes = new Map<string, Connector[]>();
  for (const connector of connectors)
    for (const route of connector.routes) routes.set(route.network, [...(routes.get(route.network) ?? []), connector]);
  /**
   * The network's direct connector (the registry's first): reported payments, name look-ups and the API's validation
   * rules are its.
   */
  const connectorOf = (network: Network): Connector | null => routes.get(network.name)?.[0] ?? null;
  const connections = connectionsOf(sandboxMode, connectors);
  const routed = createRoutedOperations({ ...routing, connectors });
  const byRoutes: Mover = {
    requestPayment: routed.requestPayment,
    promptStatus: routed.promptStatus,
    sendMoney: routed.sendMoney,
    payoutStatus: routed.payoutStatus,
    reportedPaymentStatus: async (payment) => await connectorOf(payment.network)!.reportedPaymentStatus(payment),
  };
  /** Who moves `currency` on `network`: its routes, the sandbox (`sandboxMoneyProblem` allowing), or nobody (null). */
  const route = (network: Network, currency: string): Mover | null => {
    if (currency === 'BXC') return sandbox;
    if (connectorOf(network)) return byRoutes;
    return sandboxMoneyProblem(network, currency, connections) === null ? sandbox : null;
  };
  const context: RouterContext = { sandbox, connectorOf };

  return {
    connections,
    async requestPayment(prompt: PaymentPrompt): Promise<PromptResult> {
      const adapter = route(prompt.network, prompt.currency);
      return adapter ? await adapter.requestPayment(prompt) : { accepted: false, error: noConnector(prompt.network) };
    },
    async promptStatus(prompt: TakenPrompt): Promise<PromptStatus> {
      const adapter = route(prompt.network, prompt.currency);
      return adapter ? await adapter.promptStatus(prompt) : { status: 'failed', error: noConnector(prompt.network) };
    },
    async reportedPaymentStatus(payment: ReportedPayment): Promise<ReportedPaymentStatus> {
      const adapter = route(payment.network, payment.currency);
      return adapter
        ? await adapter.reportedPaymentStatus(payment)
        : { status: 'refused', reason: noConnector(payment.network) };
    },
    async sendMoney(payout: Payout): Promise<PayoutResult> {
      const adapter = route(payout.network, payout.currency);
      return adapter
        ? await adapter.sendMoney(payout)
        : { status: 'rejected', error: noConnector(payout.network), remoteTransactionId: null };
    },
    async payoutStatus(payout: Payout): Promise<PayoutResult> {
      const adapter = route(payout.network, payout.currency);
      return adapter
        ? await adapter.payoutStatus(payout)
        : { status: 'rejected', error: noConnector(payout.network), remoteTransactionId: null };
    },
    sendSms(message: TextMessage): Promise<void> {
      return sendText(context, message);
    },
    async lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null> {
      const connector = connectorOf(network);
      if (connector === null) return sandboxMode ? await sandbox.lookupName(phoneNumber, network) : null;
      // A connector without a name look-up: instant verification says "not supported", never a name it did not get.
      return connector.lookupName ? await connector.lookupName(phoneNumber, network) : null;
    },
    supportsVerification(network: Network, currency?: string): boolean {
      // A connected operator's prompted payment is already taken when it is confirmed; paybill payments are
      // verified at Daraja's validation request instead (src/network/daraja/callbacks.ts).
      if (currency !== 'BXC' && connectorOf(network) !== null) return false;
      return sandbox.supportsVerification(network, currency);
    },
    rejectPayment(rejection): Promise<void> {
      return refusePayment(context, rejection);
    },
  };
}
