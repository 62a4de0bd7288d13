/**
 * `npm start`'s supervisor (scripts/infra.mjs, superviseChild) on a real child process: a tiny
 * Node server that answers with its pid. Killed or exiting on its own, it is restarted after the
 * backoff in its place in the list of children, with one line saying so; stopChildren ends the
 * supervision, so neither a stop nor a restart already waiting brings it back.
 */
import { afterEach, beforeEach, expect, spyOn, test, type Mock } from 'bun:test';
import type { ChildProcess } from 'node:child_process';
import { RESTART_BACKOFF, freePort, restartDelay, stopChildren, superviseChild } from '../../scripts/infra.mjs';
import { eventually } from '../helpers';

/** Answers every request with its pid; a request to /exit also makes it exit with code 3. */
const SERVER = `
const port = Number(process.argv[1]);
require('node:http').createServer((request, response) => {
  response.end(String(process.pid));
  if (request.url === '/exit') setImmediate(() => process.exit(3));
}).listen(port, '127.0.0.1');
`;
const BACKOFF = { firstMs: 100, maxMs: 400, steadyAfterMs: 60_000 };

let children: ChildProcess[] = [];
let stdout: Mock<typeof process.stdout.write>;
beforeEach(() => {
  children = [];
  stdout = spyOn(process.stdout, 'write').mockImplementation(() => true);
});
afterEach(async () => {
  stdout.mockRestore();
  await stopChildren(children);
});

/** The lines the supervisor printed. */
const said = () => stdout.mock.calls.map(([line]) => String(line).trim());

async function superviseServer() {
  const port = (await freePort()) as number;
  const supervisor = superviseChild(children, 'server', 'node', ['-e', SERVER, String(port)], { backoff: BACKOFF });
  const answer = (path = '/') =>
    fetch(`http://127.0.0.1:${port}${path}`)
      .then((response) => response.text())
      .then(Number, () => null);
  /** Waits until a process other than `previous` answers; its pid. */
  const servedByAnother = (previous: number | undefined) =>
    eventually(
      'a server to answer',
      async () => {
        const pid = await answer();
        return pid !== null && pid !== previous && pid;
      },
      10_000,
    );
  return { supervisor, answer, servedByAnother };
}

const exited = (child: ChildProcess) => new Promise((resolve) => child.once('exit', resolve));

test('the wait before a restart: 1 s, doubling up to 30 s, back to 1 s after a minute up', () => {
  const waits: number[] = [];
  let previous = 0;
  for (let restart = 0; restart < 7; restart += 1) waits.push((previous = restartDelay(previous, 5_000)));
  expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  expect(restartDelay(30_000, RESTART_BACKOFF.steadyAfterMs)).toBe(1_000);
});

test('a killed child, then one that exits on its own, is restarted after the backoff in its place, each restart said in one line', async () => {
  const { supervisor, answer, servedByAnother } = await superviseServer();
  const first = supervisor.current();
  expect(await servedByAnother(undefined)).toBe(first.pid!);

  const killedAt = Date.now();
  first.kill('SIGKILL');
  const secondPid = await servedByAnother(first.pid);
  expect(Date.now() - killedAt).toBeGreaterThanOrEqual(BACKOFF.firstMs);
  expect(supervisor.current().pid).toBe(secondPid);
  expect(children).toEqual([supervisor.current()]);
  expect(said()).toEqual([
    expect.stringMatching(
      new RegExp(
        `^\\[collections\\] server \\(pid ${first.pid}\\) exited with signal SIGKILL after [\\d.]+ s; restarting it in 0.1 s$`,
      ),
    ),
  ]);

  // It dies again soon after: the wait doubles.
  await answer('/exit');
  const thirdPid = await servedByAnother(secondPid);
  expect(supervisor.current().pid).toBe(thirdPid);
  expect(children).toEqual([supervisor.current()]);
  expect(said()[1]).toMatch(
    new RegExp(
      `^\\[collections\\] server \\(pid ${secondPid}\\) exited with code 3 after [\\d.]+ s; restarting it in 0.2 s$`,
    ),
  );
});

test('a stop is not followed by a restart', async () => {
  const { supervisor, servedByAnother } = await superviseServer();
  const running = supervisor.current();
  await servedByAnother(undefined);

  await stopChildren(children);
  expect(running.signalCode).toBe('SIGTERM');
  // The supervisor hears of the exit before stopChildren returns; it says nothing and starts nothing.
  expect(said()).toEqual([]);
  await Bun.sleep(BACKOFF.firstMs * 2);
  expect(supervisor.current()).toBe(running);
  expect(children).toEqual([running]);
});

test('a stop during the wait cancels the restart that was due', async () => {
  const { supervisor, servedByAnother } = await superviseServer();
  const killed = supervisor.current();
  await servedByAnother(undefined);

  const gone = exited(killed);
  killed.kill('SIGKILL');
  await gone;
  expect(said()).toEqual([expect.stringContaining('restarting it in 0.1 s')]);
  await stopChildren(children);
  await Bun.sleep(BACKOFF.firstMs * 2);
  expect(supervisor.current()).toBe(killed);
  expect(children).toEqual([killed]);
});
