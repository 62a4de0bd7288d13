/** The organization's webhook signing secret and the HTTP Basic credentials of its deliveries. */
import {
  rotateSigningSecret,
  setBasicCredentials,
  showSigningSecret,
  type SigningSecretView,
} from '../services/webhooks/webhook-secrets';
import { UsageError, organizationId, print, type Command, type CommandContext } from './cli';

function secretLines(view: SigningSecretView): string[] {
  return [
    `organization ${view.organizationId} signing secret ${view.signingSecret}`,
    ...(view.previousSecretExpiresAt
      ? [`the previous secret also signs until ${view.previousSecretExpiresAt.toISOString()}`]
      : []),
    `HTTP Basic credentials: ${view.basicAuth ? 'set' : 'none'}`,
  ];
}

async function signingSecret({ sql, values, command }: CommandContext): Promise<void> {
  const org = organizationId(values.org);
  const view = command.endsWith('rotate')
    ? await rotateSigningSecret(sql, { organizationId: org })
    : await showSigningSecret(sql, { organizationId: org });
  print(values.json, view, secretLines(view));
}

export const webhookCommands: Record<string, Command> = {
  'webhooks secret show': { usage: 'webhooks secret show --org ID [--json]', run: signingSecret },
  'webhooks secret rotate': { usage: 'webhooks secret rotate --org ID [--json]', run: signingSecret },
  'webhooks basic-auth set': {
    usage: 'webhooks basic-auth set --org ID --username USER --password PASSWORD',
    async run({ sql, values }) {
      const username = values.username ?? '';
      const password = values.password ?? '';
      // RFC 7617: the user-id of Basic credentials cannot contain a colon.
      if (username === '' || username.includes(':'))
        throw new UsageError('--username is required and may not contain ":"');
      if (password === '') throw new UsageError('--password is required');
      const org = organizationId(values.org);
      await setBasicCredentials(sql, { organizationId: org }, { username, password });
      print(values.json, { organizationId: org, basicAuth: true, username }, [
        `organization ${org}: deliveries carry HTTP Basic credentials for user ${username}`,
      ]);
    },
  },
  'webhooks basic-auth clear': {
    usage: 'webhooks basic-auth clear --org ID',
    async run({ sql, values }) {
      const org = organizationId(values.org);
      await setBasicCredentials(sql, { organizationId: org }, null);
      print(values.json, { organizationId: org, basicAuth: false }, [
        `organization ${org}: deliveries carry no Authorization header`,
      ]);
    },
  },
};
