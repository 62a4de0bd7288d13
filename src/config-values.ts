/**
 * The shapes of environment values (valibot), shared by the configuration (src/config.ts) and the
 * settings each network connector declares in its own folder (src/network/<operator>/settings.ts).
 */
import * as v from 'valibot';

export const booleanString = v.pipe(
  v.picklist(['true', 'false', '1', '0']),
  v.transform((value) => value === 'true' || value === '1'),
);
export const integerString = (min: number) =>
  v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(min));
export const httpUrl = v.pipe(
  v.string(),
  v.url('must be a URL'),
  v.regex(/^https?:\/\//, 'must be an http:// or https:// URL'),
  v.transform((value) => value.replace(/\/+$/, '')),
);
export const secret = v.pipe(v.string(), v.minLength(1));

/** Whether a connector is on (its switch variable is set), and the problems of its other required variables. */
export function connectorSwitch(
  switchName: string,
  values: Record<string, unknown>,
  required: string[],
  problems: string[],
): boolean {
  if (values[switchName] === undefined) return false;
  for (const name of required)
    if (values[name] === undefined) problems.push(`${name}: required when ${switchName} is set`);
  return true;
}
