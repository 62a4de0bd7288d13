import * as v from 'valibot';

const booleanString = v.pipe(
  v.picklist(['true', 'false', '1', '0']),
  v.transform((value) => value === 'true' || value === '1'),
);
const integerString = (min: number) =>
  v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(min));

const ConfigSchema = v.object({
  PORT: v.optional(integerString(0), '8000'),
  DATABASE_URL: v.optional(v.pipe(v.string(), v.url()), 'postgres://postgres@127.0.0.1:5432/collections'),
  DATABASE_POOL_SIZE: v.optional(integerString(1), '10'),
  TEMPORAL_ADDRESS: v.optional(v.string(), '127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: v.optional(v.string(), 'default'),
  TASK_QUEUE: v.optional(v.pipe(v.string(), v.minLength(1)), 'collections'),
  PUBLIC_BASE_URL: v.optional(v.pipe(v.string(), v.url())),
  SANDBOX: v.optional(booleanString, 'true'),
  PAGE_SIZE_MAX: v.optional(integerString(1), '100'),
  OUTBOX_SWEEP_INTERVAL_SECONDS: v.optional(integerString(1), '60'),
  OUTBOX_GRACE_SECONDS: v.optional(integerString(0), '30'),
  OUTBOX_SWEEP: v.optional(booleanString, 'true'),
  WORKFLOW_BUNDLE_PATH: v.optional(v.string()),
  SANDBOX_PAYMENT_DELAY_SECONDS: v.optional(integerString(0), '5'),
  FAILED_PROMPT_RETRY_SECONDS: v.optional(integerString(1), '600'),
  THROTTLE_READS: v.optional(integerString(1), '30'),
  THROTTLE_WRITES: v.optional(integerString(1), '3000'),
  THROTTLE_WINDOW_SECONDS: v.optional(integerString(1), '60'),
  DUPLICATE_CHECK_TTL_SECONDS: v.optional(integerString(1), '86400'),
  BILLS_BASE_URL: v.optional(v.pipe(v.string(), v.url())),
});

export type Config = {
  port: number;
  databaseUrl: string;
  databasePoolSize: number;
  temporal: { address: string; namespace: string; taskQueue: string };
  publicBaseUrl: string | undefined;
  sandbox: boolean;
  pageSizeMax: number;
  outbox: { sweepEnabled: boolean; sweepIntervalSeconds: number; graceSeconds: number };
  workflowBundlePath: string | undefined;
  collectionRequests: { sandboxPaymentDelaySeconds: number; failedPromptRetrySeconds: number };
  /** Default limits per organization and window; the admin CLI overrides them per organization. */
  throttle: { reads: number; writes: number; windowSeconds: number };
  duplicateCheckTtlSeconds: number;
  /** `{bills_url}` of api.md 4.7 as the OpenAPI document shows it; unset = the API's own base URL. */
  billsBaseUrl: string | undefined;
};

/** Reads and validates the environment once; everything else receives the result. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = v.safeParse(ConfigSchema, defined);
  if (!result.success) {
    const problems = result.issues.map((issue) => `${v.getDotPath(issue) ?? '?'}: ${issue.message}`);
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  const c = result.output;
  return {
    port: c.PORT,
    databaseUrl: c.DATABASE_URL,
    databasePoolSize: c.DATABASE_POOL_SIZE,
    temporal: { address: c.TEMPORAL_ADDRESS, namespace: c.TEMPORAL_NAMESPACE, taskQueue: c.TASK_QUEUE },
    publicBaseUrl: c.PUBLIC_BASE_URL?.replace(/\/+$/, ''),
    sandbox: c.SANDBOX,
    pageSizeMax: c.PAGE_SIZE_MAX,
    outbox: {
      sweepEnabled: c.OUTBOX_SWEEP,
      sweepIntervalSeconds: c.OUTBOX_SWEEP_INTERVAL_SECONDS,
      graceSeconds: c.OUTBOX_GRACE_SECONDS,
    },
    workflowBundlePath: c.WORKFLOW_BUNDLE_PATH,
    collectionRequests: {
      sandboxPaymentDelaySeconds: c.SANDBOX_PAYMENT_DELAY_SECONDS,
      failedPromptRetrySeconds: c.FAILED_PROMPT_RETRY_SECONDS,
    },
    throttle: { reads: c.THROTTLE_READS, writes: c.THROTTLE_WRITES, windowSeconds: c.THROTTLE_WINDOW_SECONDS },
    duplicateCheckTtlSeconds: c.DUPLICATE_CHECK_TTL_SECONDS,
    billsBaseUrl: c.BILLS_BASE_URL?.replace(/\/+$/, ''),
  };
}
