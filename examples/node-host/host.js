#!/usr/bin/env node
// Example host: spawn dsh-search and drive one session over LSP framing with vscode-jsonrpc.
//
//   node host.js [--exe PATH] [--corpus DIR] [--block-in-slow-grep]
//
//   --exe PATH             the daemon (else $DSH_SEARCH_EXE, else ../../dist/dsh-search next to this file)
//   --corpus DIR           where the slow-grep corpus lives (generated there when missing; default: a
//                          temporary directory)
//   --block-in-slow-grep   start a slow grep and wait for it forever (the tests SIGKILL the host then)
//
// The session: initialize, tools/list, glob, grep, a grep with a bad pattern, a slow grep cancelled with
// a CancellationTokenSource ($/cancelRequest → error -32800), scrollback/append + terminal_search,
// shutdown + exit, then a clean teardown. Each step prints one transcript line on stdout.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  CancellationTokenSource,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from 'vscode-jsonrpc/node';

const HERE = dirname(fileURLToPath(import.meta.url));

// JSON-RPC / LSP code for a request the client cancelled (LSP's RequestCancelled; not in vscode-jsonrpc's
// own ErrorCodes, which stop at the JSON-RPC reserved ones).
const REQUEST_CANCELLED = -32800;

// A regex with no required literal over Unicode word classes: ripgrep has to run its regex engine over
// every line, which takes seconds on the generated corpus. Nothing in the corpus has a nine-letter word,
// so the search finds nothing and stays small however long it runs.
const SLOW_PATTERN = String.raw`(?:\w+\W){1,20}?\w{9}\b`;

// How long to wait for the daemon to leave on its own after stdin is closed, and after SIGTERM. The daemon
// exits within graceMs (3000 by default) + 1 s of SIGTERM.
const EXIT_WAIT_MS = 5000;
const TERM_WAIT_MS = 3000 + 1000 + 2000;

function parseArgs(argv) {
  const options = { exe: process.env.DSH_SEARCH_EXE || resolve(HERE, '../../dist/dsh-search'), corpus: null, block: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--exe') options.exe = resolve(argv[++i]);
    else if (arg === '--corpus') options.corpus = resolve(argv[++i]);
    else if (arg === '--block-in-slow-grep') options.block = true;
    else if (!arg.startsWith('-')) options.exe = resolve(arg);
    else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

const say = (line) => process.stdout.write(`${line}\n`);

// -- a small tree to search, and a corpus that keeps ripgrep busy ----------------------------------------

function writeDemoTree(root) {
  const files = {
    'src/app.js': "// TODO: wire the search\nconsole.log('hello');\n",
    'src/util.js': 'export const add = (a, b) => a + b;\n',
    'docs/notes.md': '# Notes\n\nTODO: write the host guide\n',
    'README.md': 'demo tree\n',
  };
  let mtime = 1_700_000_000;
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), text);
    utimesSync(join(root, name), mtime, mtime); // glob lists oldest first: make the order fixed
    mtime += 60;
  }
}

function ensureSlowCorpus(root, files = 4, lines = 400_000) {
  if (existsSync(join(root, `slow-${files - 1}.txt`))) return;
  mkdirSync(root, { recursive: true });
  const words = ['alpha', 'beta', 'gamma', 'delta', 'épsilon', 'zeta', 'ηta', 'theta'];
  let seed = 1; // a fixed, tiny PRNG (mulberry32): the same corpus every time
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [];
  for (let i = 0; i < lines; i++) {
    const line = [];
    for (let w = 0; w < 8; w++) line.push(words[Math.floor(random() * words.length)]);
    out.push(line.join(' '));
  }
  const text = `${out.join('\n')}\n`;
  for (let i = 0; i < files; i++) writeFileSync(join(root, `slow-${i}.txt`), text);
}

// -- the daemon process -----------------------------------------------------------------------------------

function startDaemon(exe, workdir, spillDir) {
  const child = spawn(
    exe,
    [
      '--framing', 'lsp', // auto-detection would work too (first byte 'C'); saying it is clearer
      '--sample-over-cap-glob-results', 'true', // required: there is no default
      '--workdir', workdir,
      '--spill-dir', spillDir,
    ],
    // stdin/stdout carry the protocol; stderr (logs, and the one-line startup errors) goes to ours.
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  // Writing to a daemon that has gone fails with EPIPE on this stream; the exit status tells the story.
  child.stdin.on('error', () => {});
  // A failed spawn (no such file) is an 'error' event, not an exception.
  const spawned = new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  return { child, exited, spawned };
}

// Stop the daemon without leaking anything:
//  1. close its stdin: it answers what is still running and exits 0 (after `exit` it is gone already);
//  2. if it is still there after a grace, SIGTERM: it aborts its searches, kills their ripgrep process
//     groups and exits within graceMs + 1 s;
//  3. SIGKILL only as the very last resort, never first. dist/dsh-search is a PyInstaller onefile
//     executable: the process we spawned is a launcher that unpacks Python into a temporary _MEI*
//     directory and runs the daemon as its child. SIGKILL cannot be caught, so a SIGKILLed launcher
//     neither forwards the signal nor removes that directory: the extraction directory leaks, and the
//     Python process (with any ripgrep it runs) is orphaned until it notices its closed pipes.
async function stopDaemon({ child, exited }) {
  // The exit status, or null if the daemon is still running after ms (the timer must not outlive the
  // wait, or it would keep this process alive).
  const within = async (ms) => {
    const timer = new AbortController();
    const timeout = sleep(ms, null, { signal: timer.signal }).catch(() => null);
    try {
      return await Promise.race([exited, timeout]);
    } finally {
      timer.abort();
    }
  };
  child.stdin.end();
  let status = await within(EXIT_WAIT_MS);
  if (status === null) {
    say(`teardown: daemon still running ${EXIT_WAIT_MS} ms after stdin closed; sending SIGTERM`);
    child.kill('SIGTERM');
    status = await within(TERM_WAIT_MS);
  }
  if (status === null) {
    say('teardown: daemon ignored SIGTERM; sending SIGKILL (last resort)');
    child.kill('SIGKILL');
    status = await exited;
  }
  return status;
}

// -- the session ------------------------------------------------------------------------------------------

// A tool method's error carries data {code, text}: `text` ("Error: …") is what a model should be shown.
function describeError(err) {
  const data = err.data ?? {};
  const text = String(data.text ?? err.message).split('\n')[0];
  return `error ${err.code} ${data.code ?? '-'}: ${text}`;
}

// Every request gets a deadline, so the host never waits forever on its child. On expiry (or when the
// caller cancels `source`) the token is cancelled: vscode-jsonrpc sends `$/cancelRequest {id}`, the daemon
// kills that search's ripgrep process group and answers -32800, and the promise rejects with that error.
async function request(connection, method, params, { timeoutMs = 30_000, source = new CancellationTokenSource() } = {}) {
  const timer = setTimeout(() => source.cancel(), timeoutMs);
  try {
    return await (params === undefined
      ? connection.sendRequest(method, source.token)
      : connection.sendRequest(method, params, source.token));
  } finally {
    clearTimeout(timer);
    source.dispose();
  }
}

async function expectError(promise) {
  try {
    const result = await promise;
    throw new Error(`expected an error, got ${JSON.stringify(result).slice(0, 200)}`);
  } catch (err) {
    if (err instanceof ResponseError) return err;
    throw err;
  }
}

async function session(connection, options, corpus) {
  const init = await request(connection, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'dsh-search-node-host', version: '0.1.0' },
  });
  say(`initialize: ${init.serverInfo.name} ${init.serverInfo.version}, ripgrep ${init.ripgrep.version}, protocol ${init.protocolVersion}`);

  const { tools } = await request(connection, 'tools/list');
  const toolNames = tools.map((t) => t.name);
  say(`tools/list: ${toolNames.join(', ')}`);

  if (options.block) {
    // For the tests: a slow grep that this host waits for (deliberately without a deadline) until
    // someone kills it.
    say(`slow grep: started in ${corpus}, waiting`);
    await connection.sendRequest('grep', { pattern: SLOW_PATTERN, cwd: corpus });
    say('slow grep: ended');
    return;
  }

  const glob = await request(connection, 'glob', { pattern: '**/*.js' });
  say(`glob "**/*.js": ${glob.text.split('\n').join(', ')}`);

  const grep = await request(connection, 'grep', { pattern: 'TODO' });
  say(`grep "TODO": ${grep.text.split('\n')[0]} in ${grep.meta.files.map((f) => f.path).join(', ')}`);

  // A search failure is a JSON-RPC error whose data says what to show the model.
  const bad = await expectError(request(connection, 'grep', { pattern: '(' }));
  say(`grep "(": ${describeError(bad)}`);

  // Cancellation: cancelling the token makes vscode-jsonrpc send `$/cancelRequest {id}`; the daemon kills
  // that search's ripgrep process group and answers the request with -32800.
  const source = new CancellationTokenSource();
  const started = Date.now();
  const slow = request(connection, 'grep', { pattern: SLOW_PATTERN, cwd: corpus }, { source });
  await sleep(500);
  const cancelledAt = Date.now();
  source.cancel();
  const aborted = await expectError(slow);
  if (aborted.code !== REQUEST_CANCELLED) throw new Error(`slow grep: expected -32800, got ${describeError(aborted)}`);
  say(`slow grep: cancelled after ${cancelledAt - started} ms, answered ${Date.now() - cancelledAt} ms later: ${describeError(aborted)}`);

  if (toolNames.includes('terminal_search')) {
    // Terminal output arrives in chunks, with colours and CRLFs; the daemon keeps a sanitised scrollback
    // per terminal session. A notification appends without an answer; a request returns the line count.
    const sessionId = 'term-1';
    await connection.sendNotification('scrollback/append', { sessionId, data: '$ make\r\n\x1b[31merror: missing semicolon\x1b[0m\r' });
    const appended = await request(connection, 'scrollback/append', {
      sessionId,
      data: '\nbuild failed\r\n$ make test\r\nerror: 2 tests failed\r\n',
    });
    say(`scrollback/append: totalLines=${appended.totalLines} truncated=${appended.truncated}`);
    const found = await request(connection, 'terminal_search', { sessionId, pattern: 'error' });
    const lines = found.matches.map((m) => `[offset ${m.offset}] ${m.line}`);
    say(`terminal_search "error": ${found.matchCount} matches: ${lines.join(' | ')}`);
    await request(connection, 'scrollback/close', { sessionId });
  } else {
    say('terminal_search: not offered by this daemon, skipped');
  }

  // Polite end: `shutdown` waits for running searches and answers null; `exit` makes the daemon leave.
  const down = await request(connection, 'shutdown');
  say(`shutdown: ${JSON.stringify(down)}`);
  await connection.sendNotification('exit');
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const scratch = mkdtempSync(join(tmpdir(), 'dsh-node-host-'));
  const workdir = join(scratch, 'tree');
  writeDemoTree(workdir);
  const corpus = options.corpus ?? join(scratch, 'slow');
  ensureSlowCorpus(corpus);

  const daemon = startDaemon(options.exe, workdir, join(scratch, 'spill'));
  try {
    await daemon.spawned;
  } catch (err) {
    say(`FAILED: could not start ${options.exe}: ${err.message}`);
    rmSync(scratch, { recursive: true, force: true });
    process.exitCode = 1;
    return;
  }
  say(`spawned ${options.exe} pid=${daemon.child.pid} framing=lsp`);
  // If the daemon leaves while we still wait for answers, stop waiting. At startup that means it refused
  // to run and said why in one stderr line: status 3 = the ripgrep sidecar is missing or broken (a broken
  // install: reinstall, do not retry), status 2 = invalid configuration.
  const gone = daemon.exited.then(({ code, signal }) => {
    throw new Error(`daemon exited unexpectedly with code ${code} signal ${signal ?? 'none'}`);
  });

  const connection = createMessageConnection(
    new StreamMessageReader(daemon.child.stdout),
    new StreamMessageWriter(daemon.child.stdin),
  );
  connection.onError(([err]) => say(`connection error: ${err?.message ?? err}`));
  connection.listen();

  // Ctrl-C or SIGTERM to this host: stop the daemon the same clean way before leaving.
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, async () => {
      say(`received ${signal}: stopping the daemon`);
      const status = await stopDaemon(daemon);
      say(`exit: daemon exited with code ${status.code} signal ${status.signal ?? 'none'}`);
      rmSync(scratch, { recursive: true, force: true });
      process.exit(1);
    });
  }

  let failed = null;
  try {
    await Promise.race([session(connection, options, corpus), gone]);
  } catch (err) {
    failed = err;
  } finally {
    const status = await stopDaemon(daemon);
    connection.dispose();
    say(`exit: daemon exited with code ${status.code} signal ${status.signal ?? 'none'}`);
    rmSync(scratch, { recursive: true, force: true });
  }
  if (failed) {
    say(`FAILED: ${failed instanceof ResponseError ? describeError(failed) : failed.message}`);
    process.exitCode = 1;
  } else {
    say('done');
  }
}

await main();
