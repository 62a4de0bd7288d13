/**
 * The network adapter the service uses: each call goes to the connector of the operator that
 * serves the network and currency (M-Pesa Daraja for Safaricom, MTN MoMo for each MTN network whose
 * market is configured: a number reaches its own country's market only; Airtel Money for the Airtel
 * networks of its configured countries; Vodacom M-Pesa for the Vodacom networks of its configured markets), and everything else to the sandbox network: BXC always, and in sandbox mode the
 * networks with no connector while no connector is on at all. A real currency the sandbox may not
 * move is refused at the door (domain/networks.ts); one that still arrives here is refused as a result.
 */
import { CONNECTED_NETWORK, airtelNetworks, connectedNetworks, sandboxMoneyProblem, type Connections, type Network } from '../domain/networks';
import { logger } from '../log';
import type {
  NameLookup, NetworkAdapter, PaymentPrompt, Payout, PayoutResult, PromptResult, PromptStatus, ReportedPayment, ReportedPaymentStatus, TakenPrompt, TextMessage,
} from './adapter';
import type { AirtelConnector } from './airtel';
import type { DarajaConnector } from './daraja';
import type { MomoConnector } from './momo';
import type { VodacomConnector } from './vodacom';

/** The configured connectors: Daraja, a MoMo connector per market by the network it serves, Airtel Money and Vodacom M-Pesa. */
export type Connectors = {
  daraja: DarajaConnector | null; momo: ReadonlyMap<string, MomoConnector>; airtel: AirtelConnector | null; vodacom?: VodacomConnector | null;
};


type Connector = Omit<NetworkAdapter, 'sendSms' | 'lookupName' | 'supportsVerification' | 'rejectPayment'> & {
  lookupName?: (phoneNumber: string, network: Network) => Promise<NameLookup | null>;
};

export function createNetworkRouter(sandbox: NetworkAdapter, connectors: Connectors, sandboxMode: boolean): NetworkAdapter {
  const airtelServed: ReadonlySet<string> = new Set(airtelNetworks(connectors.airtel?.countries ?? []));
  const vodacomServed: ReadonlySet<string> = new Set((connectors.vodacom?.markets ?? []).map((market) => market.network));
  const connectorOf = (network: Network): Connector | null => {
    if (network.name === CONNECTED_NETWORK.daraja) return connectors.daraja;
    if (airtelServed.has(network.name)) return connectors.airtel;
    if (vodacomServed.has(network.name)) return connectors.vodacom ?? null;
    return connectors.momo.get(network.name) ?? null;
  };
  const connections: Connections = {
    sandboxMode,
    connected: connectedNetworks({
      mpesa: connectors.daraja, momoMarkets: [...connectors.momo.keys()].map((network) => ({ network })), airtel: connectors.airtel, vodacom: connectors.vodacom ?? null,
    }),
  };
  /** Who moves `currency` on `network`: its connector, the sandbox (`sandboxMoneyProblem` allowing), or nobody (null). */
  const route = (network: Network, currency: string): Connector | NetworkAdapter | null => {
    if (currency === 'BXC') return sandbox;
    return connectorOf(network) ?? (sandboxMoneyProblem(network, currency, connections) === null ? sandbox : null);
  };
  const noConnector = (network: Network) => `${network.name} has no connector in this deployment; real money on it needs one (see docs/going-live.md).`;

  return {
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
      return adapter ? await adapter.reportedPaymentStatus(payment) : { status: 'refused', reason: noConnector(payment.network) };
    },
    async sendMoney(payout: Payout): Promise<PayoutResult> {
      const adapter = route(payout.network, payout.currency);
      return adapter ? await adapter.sendMoney(payout) : { status: 'rejected', error: noConnector(payout.network), remoteTransactionId: null };
    },
    async payoutStatus(payout: Payout): Promise<PayoutResult> {
      const adapter = route(payout.network, payout.currency);
      return adapter ? await adapter.payoutStatus(payout) : { status: 'rejected', error: noConnector(payout.network), remoteTransactionId: null };
    },
    async sendSms(message: TextMessage): Promise<void> {
      if (message.currency !== 'BXC' && connectorOf(message.network) !== null) {
        // No operator API sends texts: the operator's own prompt and receipt text reach the subscriber.
        logger.info('text not sent: the operator has no text-message API', { requestId: message.requestId, kind: message.kind, network: message.network.name });
        return;
      }
      await sandbox.sendSms(message);
    },
    async lookupName(phoneNumber: string, network: Network): Promise<NameLookup | null> {
      const connector = connectorOf(network);
      if (connector === null) return sandboxMode ? await sandbox.lookupName(phoneNumber, network) : null;
      // Daraja has no name look-up: a connected Safaricom number is "not supported" for instant verification.
      return connector.lookupName ? await connector.lookupName(phoneNumber, network) : null;
    },
    supportsVerification(network: Network, currency?: string): boolean {
      // A connected operator's prompted payment is already taken when it is confirmed; paybill payments are
      // verified at Daraja's validation request instead (src/api/operator-callbacks.ts).
      if (currency !== 'BXC' && connectorOf(network) !== null) return false;
      return sandbox.supportsVerification(network, currency);
    },
    async rejectPayment(rejection): Promise<void> {
      if (connectorOf(rejection.network) !== null && rejection.currency !== 'BXC') {
        logger.warn('a connected operator has no API to refuse a completed payment', { network: rejection.network.name, remoteTransactionId: rejection.remoteTransactionId });
        return;
      }
      await sandbox.rejectPayment(rejection);
    },
  };
}
