#!/usr/bin/env node
// Example host: one dsh-search session through the dsh-search-client library (clients/node), which spawns
// the daemon and speaks LSP framing with vscode-jsonrpc underneath.
//
//   node host.js [--exe PATH | PATH] [--corpus DIR] [--block-in-slow-grep]
//
//   --exe PATH             the daemon (else $DSH_SEARCH_EXE, else `dsh-search` on PATH)
//   --corpus DIR           where the slow-grep corpus lives (generated there when missing; default: a
//                          temporary directory)
//   --block-in-slow-grep   start a slow grep and wait for it forever (the tests SIGKILL the host then)
//
// The session: initialize, tools/list, glob, grep, a grep with a bad pattern, a slow grep cancelled with an
// AbortSignal ($/cancelRequest → error -32800), scrollback/append + terminal_search, shutdown, then the
// client's graceful teardown. Each step prints one transcript line on stdout.

import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { AbortedError, Client, RequestError, StartupError, findExecutable } from 'dsh-search-client';

// A regex with no required literal over Unicode word classes: ripgrep has to run its regex engine over
// every line, which takes seconds on the generated corpus. Nothing in the corpus has a nine-letter word,
// so the search finds nothing and stays small however long it runs.
const SLOW_PATTERN = String.raw`(?:\w+\W){1,20}?\w{9}\b`;

// Every call gets a deadline: a host must never wait forever on its child. When it passes, the client
// cancels the request in the daemon ($/cancelRequest) rather than just stop waiting.
const deadline = (ms = 30_000) => ({ signal: AbortSignal.timeout(ms) });

function parseArgs(argv) {
  const options = { exe: undefined, corpus: null, block: false };
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

// -- the session ------------------------------------------------------------------------------------------

// A tool method's error carries the failure kind (`code`) and `text` ("Error: …"), what a model should see.
function describeError(err) {
  if (err instanceof AbortedError && err.reply) return describeError(err.reply);
  if (err instanceof RequestError) return `error ${err.rpcCode} ${err.code}: ${err.text.split('\n')[0]}`;
  return err.message;
}

async function expectError(promise) {
  try {
    const result = await promise;
    throw new Error(`expected an error, got ${JSON.stringify(result).slice(0, 200)}`);
  } catch (err) {
    if (err instanceof RequestError || err instanceof AbortedError) return err;
    throw err;
  }
}

async function session(client, options, corpus) {
  const init = client.initializeResult;
  say(`initialize: ${init.serverInfo.name} ${init.serverInfo.version}, ripgrep ${init.ripgrep.version}, protocol ${init.protocolVersion}`);

  // The model-facing tools. terminal_search may be listed only once a scrollback exists; it can be called
  // directly either way.
  const tools = await client.toolsList(deadline());
  say(`tools/list: ${tools.map((t) => t.name).join(', ')}`);

  if (options.block) {
    // For the tests: a slow grep that this host waits for (deliberately without a deadline) until someone
    // kills it.
    say(`slow grep: started in ${corpus}, waiting`);
    await client.grep(SLOW_PATTERN, { cwd: corpus });
    say('slow grep: ended');
    return;
  }

  const glob = await client.glob('**/*.js', deadline());
  say(`glob "**/*.js": ${glob.text.split('\n').join(', ')}`);

  const grep = await client.grep('TODO', deadline());
  say(`grep "TODO": ${grep.text.split('\n')[0]} in ${grep.meta.files.map((f) => f.path).join(', ')}`);

  // A search failure is a RequestError: `code` says what failed, `text` what to show the model.
  const bad = await expectError(client.grep('(', deadline()));
  say(`grep "(": ${describeError(bad)}`);

  // Cancellation: aborting the signal makes the client send `$/cancelRequest {id}`; the daemon kills that
  // search's ripgrep process group and answers -32800, and the call rejects with an AbortedError carrying
  // that answer.
  const controller = new AbortController();
  const started = Date.now();
  const slow = client.grep(SLOW_PATTERN, { cwd: corpus, signal: controller.signal });
  await sleep(500);
  const cancelledAt = Date.now();
  controller.abort();
  const aborted = await expectError(slow);
  if (!(aborted instanceof AbortedError) || aborted.reply?.rpcCode !== -32800) {
    throw new Error(`slow grep: expected -32800, got ${describeError(aborted)}`);
  }
  say(`slow grep: cancelled after ${cancelledAt - started} ms, answered ${Date.now() - cancelledAt} ms later: ${describeError(aborted)}`);

  // Terminal output arrives in chunks, with colours and CRLFs; the daemon keeps a sanitised scrollback per
  // terminal session. A notification appends without an answer; a request returns the line count.
  const sessionId = 'term-1';
  await client.scrollbackAppendNoWait(sessionId, '$ make\r\n\x1b[31merror: missing semicolon\x1b[0m\r');
  const appended = await client.scrollbackAppend(sessionId, '\nbuild failed\r\n$ make test\r\nerror: 2 tests failed\r\n', deadline());
  say(`scrollback/append: totalLines=${appended.totalLines} truncated=${appended.truncated}`);
  const found = await client.terminalSearch(sessionId, 'error', deadline());
  const lines = found.matches.map((m) => `[offset ${m.offset}] ${m.line}`);
  say(`terminal_search "error": ${found.matchCount} matches: ${lines.join(' | ')}`);
  await client.scrollbackClose(sessionId, deadline());

  // Polite end: `shutdown` waits for running searches and answers null; close() then says `exit`.
  say(`shutdown: ${JSON.stringify(await client.shutdown())}`);
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  let executable;
  try {
    executable = findExecutable(options.exe); // --exe or the argument, else $DSH_SEARCH_EXE, else PATH
  } catch (err) {
    say(`FAILED: ${err.message}`);
    process.exitCode = 1;
    return;
  }
  const scratch = mkdtempSync(join(tmpdir(), 'dsh-node-host-'));
  const workdir = join(scratch, 'tree');
  writeDemoTree(workdir);
  const corpus = options.corpus ?? join(scratch, 'slow');
  ensureSlowCorpus(corpus);

  let client;
  try {
    client = await Client.start({
      executable,
      sampleOverCapGlobResults: true, // required: there is no default
      workdir,
      spillDir: join(scratch, 'spill'),
      clientInfo: { name: 'dsh-search-node-host', version: '0.1.0' },
    });
    say(`spawned ${executable} pid=${client.pid} framing=lsp`);
  } catch (err) {
    // Status 3 = the ripgrep sidecar is missing or broken (a broken install: reinstall, do not retry);
    // status 2 = invalid configuration. The daemon's one stderr line (inherited) says why.
    if (err instanceof StartupError) {
      say(`exit: daemon exited with code ${err.exitCode} signal ${err.signal ?? 'none'}`);
      say(`FAILED: daemon exited unexpectedly with code ${err.exitCode} signal ${err.signal ?? 'none'}`);
    } else {
      say(`FAILED: could not start dsh-search: ${err.message}`);
    }
    rmSync(scratch, { recursive: true, force: true });
    process.exitCode = 1;
    return;
  }

  // Ctrl-C or SIGTERM to this host: stop the daemon the same clean way before leaving.
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, async () => {
      say(`received ${signal}: stopping the daemon`);
      const status = await client.close();
      say(`exit: daemon exited with code ${status.code} signal ${status.signal ?? 'none'}`);
      rmSync(scratch, { recursive: true, force: true });
      process.exit(1);
    });
  }

  let failed = null;
  try {
    await session(client, options, corpus);
  } catch (err) {
    failed = err;
  } finally {
    // close(): shutdown (done above), exit, close stdin, SIGTERM after a grace, SIGKILL only as the last
    // resort (a SIGKILLed onefile launcher leaks its _MEI* directory and orphans the daemon).
    const status = await client.close();
    say(`exit: daemon exited with code ${status.code} signal ${status.signal ?? 'none'}`);
    rmSync(scratch, { recursive: true, force: true });
  }
  if (failed) {
    say(`FAILED: ${describeError(failed)}`);
    process.exitCode = 1;
  } else {
    say('done');
  }
}

await main();
