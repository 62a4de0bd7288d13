/**
 * Daraja's calls as the connector's parts make them: a POST with our OAuth token (fetched with the consumer key and
 * secret, kept until shortly before it expires), and the URLs Daraja calls back, under PUBLIC_BASE_URL.
 */
import type { MpesaSettings } from './settings';
import { callOperator, callWithToken, createTokenCache, field } from '../operator-http';

export function createDarajaCalls(settings: MpesaSettings, callbackBaseUrl: string) {
  const tokens = createTokenCache(async () => {
    const answer = await callOperator({
      method: 'GET',
      url: `${settings.baseUrl}/oauth/v1/generate?grant_type=client_credentials`,
      headers: {
        Authorization: `Basic ${Buffer.from(`${settings.consumerKey}:${settings.consumerSecret}`).toString('base64')}`,
      },
    });
    const token = field(answer.body, 'access_token');
    if (answer.status !== 200 || token === undefined)
      throw new Error(`Daraja token refused: HTTP ${answer.status} ${field(answer.body, 'errorCode') ?? ''}`.trim());
    // Daraja sends expires_in as text ("3599") or as a number.
    return { value: token, expiresAt: Date.now() + (Number(field(answer.body, 'expires_in')) || 3599) * 1000 };
  });
  return {
    settings,
    tokens,
    url: (path: string) => `${callbackBaseUrl}${path}`,
    post: (path: string, json: Record<string, unknown>) =>
      callWithToken(tokens, { method: 'POST', url: `${settings.baseUrl}${path}`, json }),
  };
}

/** What the connector's parts call Daraja with (`createDarajaCalls`). */
export type DarajaCalls = ReturnType<typeof createDarajaCalls>;
