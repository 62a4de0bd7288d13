import { patched } from '@temporalio/workflow';
import { incomingCollectionV1 } from './incoming-collection';
import type { IncomingCollectionInput, IncomingCollectionResult } from '../contracts/incoming-collection';
import { LEAN_CORE_PATCH } from '../contracts/common';
import { incomingCollectionV3 } from '../incoming-collection';

/**
 * The incoming collection's type before `incomingCollectionV3`: executions that started with the
 * lean-core patch run the same steps as V3 (after their marker); older ones replay the first shape.
 */
export async function incomingCollection(input: IncomingCollectionInput): Promise<IncomingCollectionResult> {
  if (!patched(LEAN_CORE_PATCH)) return await incomingCollectionV1(input);
  return await incomingCollectionV3(input);
}
