/**
 * Workflow interceptors, bundled into the workflow code (the worker's `workflowModules`, and
 * scripts/bundle-workflows.ts). A workflow is traced when it was started inside a trace: its start
 * carries the OpenTelemetry header that the client interceptors write, which only happens while
 * tracing is on (src/telemetry/tracing.ts). Such a workflow gets the SDK's OpenTelemetry
 * interceptors (a span for the run, each activity, child workflow and signal, exported through the
 * worker's `exporter` sink); any other workflow runs exactly as without them, creating no span.
 * The choice rests on the start's header, which is part of the history, so replays make the same one.
 */
import type {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type {
  ActivityInput,
  ContinueAsNewInput,
  DisposeInput,
  GetLogAttributesInput,
  GetMetricTagsInput,
  LocalActivityInput,
  Next,
  QueryInput,
  SignalInput,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  StartNexusOperationInput,
  UpdateInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/**
 * The SDK's OpenTelemetry workflow interceptors, loaded the first time a traced run needs them.
 * The bundle's modules are instantiated anew for every workflow run, and OpenTelemetry's are
 * more than half of them: imported statically they cost every run (a tenth of the workflow
 * thread's time under load in `npm run bench`), traced or not.
 */
declare const require: (id: string) => unknown;
type OpenTelemetryWorkflow = typeof import('@temporalio/interceptors-opentelemetry/lib/workflow/index.js');
const openTelemetry = () =>
  require('@temporalio/interceptors-opentelemetry/lib/workflow/index.js') as OpenTelemetryWorkflow;

/** The header `@temporalio/interceptors-opentelemetry` carries the trace context in. */
const TRACE_HEADER = '_tracer-data';

type Traced = {
  inbound: OpenTelemetryInboundInterceptor;
  outbound: OpenTelemetryOutboundInterceptor;
  internals: OpenTelemetryInternalsInterceptor;
};

export const interceptors = (): WorkflowInterceptors => {
  // Decided once per workflow run, when it starts; the OpenTelemetry interceptors exist only if it is traced.
  let traced: Traced | null = null;

  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
      if (!(TRACE_HEADER in input.headers)) return next(input);
      const { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } =
        openTelemetry();
      traced = {
        inbound: new OpenTelemetryInboundInterceptor(),
        outbound: new OpenTelemetryOutboundInterceptor(),
        internals: new OpenTelemetryInternalsInterceptor(),
      };
      return traced.inbound.execute(input, next);
    },
    handleSignal: (input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) =>
      traced ? traced.inbound.handleSignal(input, next) : next(input),
    handleUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) =>
      traced ? traced.inbound.handleUpdate(input, next) : next(input),
    validateUpdate: (input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>) =>
      traced ? traced.inbound.validateUpdate(input, next) : next(input),
    handleQuery: (input: QueryInput, next: Next<WorkflowInboundCallsInterceptor, 'handleQuery'>) =>
      traced ? traced.inbound.handleQuery(input, next) : next(input),
  };

  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
      traced ? traced.outbound.scheduleActivity(input, next) : next(input),
    scheduleLocalActivity: (
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) => (traced ? traced.outbound.scheduleLocalActivity(input, next) : next(input)),
    startNexusOperation: (
      input: StartNexusOperationInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startNexusOperation'>,
    ) => (traced ? traced.outbound.startNexusOperation(input, next) : next(input)),
    startChildWorkflowExecution: (
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) => (traced ? traced.outbound.startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) =>
      traced ? traced.outbound.continueAsNew(input, next) : next(input),
    signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) =>
      traced ? traced.outbound.signalWorkflow(input, next) : next(input),
    getLogAttributes: (
      input: GetLogAttributesInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
    ) => (traced ? traced.outbound.getLogAttributes(input, next) : next(input)),
    getMetricTags: (input: GetMetricTagsInput, next: Next<WorkflowOutboundCallsInterceptor, 'getMetricTags'>) =>
      traced ? traced.outbound.getMetricTags(input, next) : next(input),
  };

  const internals: WorkflowInternalsInterceptor = {
    dispose: (input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>) =>
      traced ? traced.internals.dispose(input, next) : next(input),
  };

  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
