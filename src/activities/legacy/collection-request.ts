/**
 * The activities of the request workflow's first shape (`collectionRequestV1` of the type
 * `collectionRequest`, src/workflows/legacy/collection-request.ts): the instructions text and the
 * prompt as two steps, each status change recorded by the workflow afterwards.
 */
import type { CollectionRequestId } from '../../domain/ids';
import type { Sql } from '../../db';
import type { NetworkAdapter, PromptResult } from '../../network/adapter';
import { requestSteps } from '../request-steps';

export function createCollectionRequestV1Activities(deps: { sql: Sql; network: NetworkAdapter }) {
  const { load, sendInstructionsText, askNetwork } = requestSteps(deps);
  return {
    async sendInstructions({ requestId, attempt }: { requestId: CollectionRequestId; attempt: number }): Promise<void> {
      await sendInstructionsText(await load(requestId), attempt);
    },

    async promptForPayment({ requestId, attempt }: { requestId: CollectionRequestId; attempt: number }): Promise<PromptResult> {
      return await askNetwork(await load(requestId), attempt);
    },
  };
}
