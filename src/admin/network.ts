/** The networks: the secret a network's payment callbacks carry, and the paybill's URLs registered with Daraja. */
import { networkByName } from '../domain/networks';
import { createConnectors } from '../network/connections';
import { DARAJA_CALLBACK_PATHS } from '../network/daraja';
import { issueNetworkSecret } from '../services/network-credentials';
import { UsageError, print, type Command } from './cli';

export const networkCommands: Record<string, Command> = {
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
      const daraja = createConnectors(config, sql).daraja;
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
