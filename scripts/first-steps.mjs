// The first steps `npm start`'s banner shows a new user, with the sandbox merchant's key: a contact,
// the events, then a collection request that the sandbox subscriber pays (`send_instructions=true`
// prompts them; without it nobody is prompted and the request stays `pending`) and how to see its
// status. README.md's "Two commands" shows the same commands with `$KEY` and `localhost:8000`, and
// test/e2e/service.test.ts runs them against the API and the worker until the request is `successful`.

/** The sandbox number of the examples: Jane Nakato in the sandbox network's directory, who pays every prompt. */
const PAYING_NUMBER = '+256772123456';

/**
 * The banner's commands for `apiKey` at `apiUrl`, one a line: `contact` and `events` first, then
 * `request` (a BXC collection request the sandbox pays) and `status` (the newest request, with its status).
 */
export function firstSteps(apiKey, apiUrl) {
  const auth = `-H "Authorization: Token ${apiKey}"`;
  return {
    contact: `curl ${auth} -d phone_number=${PAYING_NUMBER} -d first_name=A -d last_name=B ${apiUrl}/api/contacts`,
    events: `curl ${auth} ${apiUrl}/api/events`,
    request: `curl ${auth} -d phonenumber=${PAYING_NUMBER} -d amount=500 -d currency=BXC -d send_instructions=true ${apiUrl}/api/collectionrequests`,
    status: `curl ${auth} "${apiUrl}/api/collectionrequests?limit=1"`,
  };
}

/** The banner's "Try" lines; `paysAfterSeconds`: how long the sandbox subscriber takes to pay (SANDBOX_PAYMENT_DELAY_SECONDS). */
export function firstStepsText(apiKey, apiUrl, paysAfterSeconds) {
  const steps = firstSteps(apiKey, apiUrl);
  return `  Try: a contact, then the events
    ${steps.contact}
    ${steps.events}
  A collection request the sandbox subscriber pays (send_instructions=true prompts them; without it the
  request waits, "pending"), then the newest request: its "status" is "successful" about ${paysAfterSeconds} s later
    ${steps.request}
    ${steps.status}
`;
}
