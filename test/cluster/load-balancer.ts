/**
 * The load balancer's configuration (HAProxy), the one the cluster runs in front of its two
 * application nodes (nodes.ts) and the reference for a deployment's (docs/operations.md, Settings
 * to get right). Merchants' requests and operators' callbacks reach the same API, but not on the
 * same terms: a merchant repeats a request that got no answer, with its `Duplicate-Check-Key`, so
 * nothing sent is ever repeated by the balancer; an operator sends some callbacks once (M-Pesa's
 * paybill confirmation, after which it waits 10 s at most) and every callback is recorded by the
 * operator's own identifiers, so one that a node does not answer within a few seconds (cut from its
 * database before its health check fails) is sent again to the other node.
 */

export type LoadBalancerOptions = {
  /** `address:port` the balancer listens on. */
  bind: string;
  /** Each application node's API, `name` → `address:port`. */
  nodes: Record<string, string>;
  /** HAProxy's admin socket (drain and ready, in the rolling restart). */
  adminSocket: string;
  /** A file with the balancer's own 503 (the service's error body and `Retry-After`). */
  unavailableFile: string;
};

/** The balancer's backends, each holding both nodes: a node is drained or readmitted in all. */
export const BACKENDS = ['api', 'callbacks', 'validation'] as const;

/** How long a node has to answer an operator's callback before the balancer sends it to the other node. */
export const CALLBACK_ANSWER_SECONDS = 3;

/** The API's servers, checked on `/readyz`, then each again as an unchecked backup (see the comment it carries). */
function servers(nodes: Record<string, string>): string {
  const entries = Object.entries(nodes);
  return [
    '  option httpchk',
    '  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host api',
    '  http-check expect status 200',
    '  default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 2',
    ...entries.map(([name, address]) => `  server ${name} ${address} check`),
    '  # When every node fails its check at once, the cause is shared (PostgreSQL frozen, say) and no',
    "  # node is better than another: requests still go to them, unchecked, rather than to HAProxy's",
    "  # own 503. An operator sends some callbacks once (M-Pesa's paybill confirmation): one answered",
    '  # by the load balancer is lost; one that reaches a node is kept when the database answers again.',
    '  option allbackups',
    ...entries.map(([name, address]) => `  server ${name}-when-all-down ${address} backup`),
  ].join('\n');
}

export function loadBalancerConfig({ bind, nodes, adminSocket, unavailableFile }: LoadBalancerOptions): string {
  return `global
  stats socket ${adminSocket} mode 600 level admin
  maxconn 4000
  # One line per request that ended abnormally (a 5xx, a connection closed without an answer, a
  # retry), with its termination state, and one per server going up or down.
  log stdout format raw local0 info

defaults
  mode http
  log global
  option httplog
  option dontlog-normal
  option log-health-checks
  timeout connect 2s
  timeout client 65s
  timeout server 65s
  timeout http-keep-alive 10s
  timeout queue 10s
  retries 2
  # A request the chosen server never received (its connection refused) goes to the other; nothing
  # else is retried, since a write may have been done.
  option redispatch
  retry-on conn-failure
  errorfile 503 ${unavailableFile}

frontend merchants
  bind ${bind}
  # The operators' callbacks, the paybill validation apart: its answer is the merchant's decision,
  # which may take M-Pesa's 8 s, so it is never sent twice (unanswered, M-Pesa completes the
  # payment, which then comes as a confirmation).
  acl operator_callback path_beg /network/
  acl paybill_validation path /network/paybill/validation
  use_backend validation if paybill_validation
  use_backend callbacks if operator_callback
  default_backend api

backend api
  balance roundrobin
${servers(nodes)}

# An operator's callback is answered with its connection closed (\`Connection: close\`), so the
# operator never sends its next callback on a kept-alive connection at the moment the balancer
# closes it for idleness: that callback would be lost before reaching the balancer (the operator
# sees the connection reset, and M-Pesa sends a confirmation once). Merchants repeat such a request.
backend validation
  balance roundrobin
  http-response set-header Connection close
${servers(nodes)}

backend callbacks
  balance roundrobin
  http-response set-header Connection close
  # A callback a node has not answered within ${CALLBACK_ANSWER_SECONDS} s (cut from its database, its check not yet
  # failed) goes to the other node, every retry to another: callbacks are recorded by the
  # operator's identifiers, so the first node finishing it too records nothing twice. The request
  # is buffered so that it can be sent again.
  option http-buffer-request
  timeout server ${CALLBACK_ANSWER_SECONDS}s
  retries 2
  option redispatch 1
  retry-on conn-failure empty-response response-timeout
${servers(nodes)}
`;
}
