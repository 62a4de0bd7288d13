/** The networks: how each is reached, the secret a network's payment callbacks carry, and the paybill's URLs registered with Daraja. */
import { networkByName } from '../domain/networks';
import { describeConnections } from '../network/connections';
import { DARAJA_CALLBACK_PATHS, createDarajaConnector } from '../network/daraja';
import { issueNetworkSecret } from '../services/network-credentials';
import { UsageError, print, type Command } from './cli';

export const networkCommands: Record<string, Command> = {
  'network list': {
    usage: 'network list [--json]',
    async run({ values, config }) {
      // Every connector of the registry with this configuration (no operator is called; no secret is shown).
      const connections = describeConnections(config);
      print(values.json, { connections }, connections.map((row) => `${row.network.padEnd(18)} ${row.currency.padEnd(10)} ${row.connector.padEnd(16)} ${row.detail}`));
    },
  },
  'network secret create': {
    usage: 'network secret create --network NAME [--json]',
    async run({ sql, values }) {
      const network = networkByName(values.network ?? '');
      if (!network) throw new UsageError('--network must name a known network, such as "MTN Uganda" or "Sandbox"');
      const secret = await issueNetworkSecret(sql, network.name);
      print(values.json, { network: network.name, secret }, [`${network.name} callbacks: Authorization: Bearer ${secret}  (shown once; replaces any earlier secret)`]);
    },
  },
  'network register-urls': {
    usage: 'network register-urls [--json]',
    async run({ sql, values, config }) {
      const daraja = config.mpesa ? createDarajaConnector(config.mpesa, { sql, callbackBaseUrl: config.publicBaseUrl ?? '' }, config.networkStatusPollSeconds) : null;
      if (!daraja) throw new UsageError('the M-Pesa connector is off: set MPESA_CONSUMER_KEY and the other MPESA_* variables');
      const outcome = await daraja.registerUrls();
      const validationUrl = `${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.validation}`;
      const confirmationUrl = `${config.publicBaseUrl}${DARAJA_CALLBACK_PATHS.confirmation}`;
      print(values.json, { ...outcome, validationUrl, confirmationUrl }, [
        outcome.registered
          ? `Daraja registered ${validationUrl} and ${DARAJA_CALLBACK_PATHS.confirmation} for shortcode ${config.mpesa!.shortcode}`
          : `Daraja refused the registration: ${outcome.detail}`,
      ]);
      if (!outcome.registered) process.exitCode = 1;
    },
  },
};
