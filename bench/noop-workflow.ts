/** The baseline of the create benchmark: a workflow that does nothing (bench-only, never in src/workflows). */
export async function benchNoop(): Promise<void> {}
