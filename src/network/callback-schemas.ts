/** Pieces of the operators' callback schemas that every connector's routes share (./<operator>/callbacks.ts). */
import * as v from 'valibot';

/** The OpenAPI document's tag of every operator callback route. */
export const CALLBACK_TAGS = ['Operator callbacks'];
/** Text as the operators send it: a string or a number (Daraja sends codes, amounts and numbers as either). */
export const text = v.union([v.pipe(v.string(), v.maxLength(1000)), v.number()]);
export const optionalText = v.optional(v.nullable(text));
/** An operator's identifier of a transaction or a request, which a route looks an operation up by. */
export const reference = v.union([v.pipe(v.string(), v.maxLength(100)), v.number()]);
export const optionalReference = v.optional(v.nullable(reference));
/** The acknowledgement of operators that read only the status code. */
export const received = (operator: string) =>
  v.pipe(v.object({ status: v.literal('received') }), v.description(`Taken; ${operator} reads only the status code.`));
