// dsh-search-client: spawn the dsh-search daemon and talk JSON-RPC 2.0 to it over LSP framing with
// vscode-jsonrpc. Typed calls (index.d.ts), AbortSignal cancellation ($/cancelRequest → -32800), errors as
// exceptions carrying the daemon's failure kind and model-facing text, and a graceful stop that never
// SIGKILLs first.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, createReadStream, readFileSync, statSync } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';

import {
  CancellationTokenSource,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from 'vscode-jsonrpc/node';

/** JSON-RPC error code of a request cancelled with `$/cancelRequest` (LSP's RequestCancelled). */
export const REQUEST_CANCELLED = -32800;

/**
 * The failure kinds of tool methods (`data.code`) and their JSON-RPC codes: the daemon's own table
 * (daemon/dsh_search/methods/errors.py), as `rpc.discover` publishes it; the tests check it against a running
 * daemon. SEARCH_ABORTED is answered -32800 instead when the request was cancelled with `$/cancelRequest`.
 */
export const ERROR_KINDS = Object.freeze({
  INVALID_ARGS: -32602,
  SEARCH_INVALID_PATTERN: 1001,
  SEARCH_FAILED: 1002,
  SEARCH_RAW_OUTPUT_OVERFLOW: 1003,
  SEARCH_ABORTED: 1004,
});

// Names for errors that carry no data.code (envelope errors), so that RequestError.code is always a string.
const ENVELOPE_CODES = new Map([
  [-32700, 'PARSE_ERROR'],
  [-32600, 'INVALID_REQUEST'],
  [-32601, 'METHOD_NOT_FOUND'],
  [-32602, 'INVALID_PARAMS'],
  [-32603, 'INTERNAL_ERROR'],
  [REQUEST_CANCELLED, 'REQUEST_CANCELLED'],
]);

const EXIT_HINTS = new Map([
  [2, 'invalid configuration'],
  [3, 'the ripgrep sidecar dsh-search-rg is missing or unusable'],
  [127, 'the launcher could not run what it unpacked into $TMPDIR (a noexec mount?)'],
]);
// Through a launcher the status is the channel's: the far side's daemon's, or the launcher's own failure.
const LAUNCHER_EXIT_HINTS = new Map([
  ...EXIT_HINTS,
  [126, 'the far side found the executable but could not run it'],
  [
    127,
    'the far side found no such executable (is it on the PATH a non-interactive session gets?), or its launcher could not run what it unpacked into $TMPDIR',
  ],
  [255, "the launcher could not reach the far side (ssh's own failures exit 255)"],
]);

const STDERR_LINES = 200;

// vscode-jsonrpc's own error codes (a failed write, a disposed connection): not answers of the daemon.
const LIBRARY_CODES = new Set([-32099, -32098, -32097, -32096]);

// -- errors ------------------------------------------------------------------------------------------------

/** Base class of every error this client throws. */
export class DshSearchError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'DshSearchError';
  }
}

/**
 * The daemon answered with a JSON-RPC error. `code`: the failure kind (data.code, e.g. SEARCH_FAILED; for
 * envelope errors a name such as METHOD_NOT_FOUND); `rpcCode`: the numeric JSON-RPC code; `text`: data.text,
 * exactly what a model should be shown (else the message).
 */
export class RequestError extends DshSearchError {
  constructor(method, error) {
    const rpcCode = typeof error?.code === 'number' ? error.code : 0;
    const data = error?.data ?? null;
    const code = typeof data?.code === 'string' ? data.code : ENVELOPE_CODES.get(rpcCode) ?? `ERROR_${rpcCode}`;
    const message = String(error?.message ?? '');
    const text = typeof data?.text === 'string' ? data.text : message;
    super(`${method}: error ${rpcCode} ${code}: ${text}`);
    this.name = 'RequestError';
    this.method = method;
    this.code = code;
    this.rpcCode = rpcCode;
    this.text = text;
    this.rpcMessage = message;
    this.data = data;
  }
}

/**
 * A call whose AbortSignal fired. `cause` is the signal's reason; `reply` is the daemon's answer to the
 * cancellation (a RequestError with rpcCode -32800), or null if it did not come within cancelWaitMs or the
 * request was never sent.
 */
export class AbortedError extends DshSearchError {
  constructor(method, reason, reply) {
    super(`${method}: aborted${reply ? ` (daemon: ${reply.text})` : ''}`, { cause: reason });
    this.name = 'AbortError';
    this.method = method;
    this.reply = reply;
  }
}

/**
 * The daemon's answer to a cancelled call (a RequestError: rpcCode -32800, code SEARCH_ABORTED, `text` for
 * the model), found in whatever the call rejected with: an AbortedError's `reply`, a RequestError that is
 * itself that answer (a call cancelled by `close({ cancel: true })`), or either as the `cause` of an error
 * that wraps it. null when there is none (not a cancellation, or the daemon did not answer in time).
 */
export function cancelReply(err) {
  for (let seen = 0; err && seen < 16; seen++, err = err.cause) {
    if (err instanceof AbortedError) return err.reply;
    if (err instanceof RequestError && err.rpcCode === REQUEST_CANCELLED) return err;
  }
  return null;
}

/** The daemon's stdout ended (it exited) before the answer came, or the client was closed. */
export class ClosedError extends DshSearchError {
  constructor(message, { exitCode = null, signal = null, stderr = '' } = {}) {
    super(message);
    this.name = 'ClosedError';
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderr = stderr;
  }
}

/**
 * The daemon exited before answering initialize: exit 3 = the ripgrep sidecar is missing or broken (reinstall,
 * do not retry), 2 = invalid configuration. Its one stderr line is in `stderr` with `stderr: 'capture'`.
 */
export class StartupError extends ClosedError {
  constructor(message, details) {
    super(message, details);
    this.name = 'StartupError';
  }
}

// -- finding the executable --------------------------------------------------------------------------------

function isExecutableFile(path) {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// A name without a directory (`dsh-search`) is looked up on PATH, never in the current directory; and only
// in PATH's absolute directories (an empty or relative entry would mean the current directory again).
function onPath(name, env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return null;
}

const hasDirectory = (path) => path.includes('/') || (sep !== '/' && path.includes(sep));

/**
 * The dsh-search executable: `explicit` if given, else $DSH_SEARCH_EXE, else `dsh-search`; as an absolute
 * path. A path with a directory in it is taken relative to the current directory; a bare name is looked up
 * on PATH (its absolute directories only), never in the current directory. Throws if there is none.
 */
export function findExecutable(explicit, env = process.env) {
  const wanted = explicit || env.DSH_SEARCH_EXE || 'dsh-search';
  if (hasDirectory(wanted)) return resolve(wanted);
  const found = onPath(wanted, env);
  if (found) return found;
  throw new DshSearchError(
    `${wanted} not found on PATH: pass its path, set DSH_SEARCH_EXE, or put it on PATH (pip install the dsh-search-bin wheel)`,
  );
}

// -- the far side: a launcher before the daemon's argv, and the build put there --------------------------

const LAUNCHER_QUOTES = ['auto', 'shell', 'none'];
const SHELL_LAUNCHERS = new Set(['ssh']);
const INSTALL_PREFIX = 'dsh-search-install: ';

/**
 * Whether the daemon's argv is quoted for a POSIX shell and joined into one argument behind the launcher
 * ('shell'; what ssh needs, whose server hands the command line to the remote user's shell) or passed as it
 * is ('none': docker/podman/kubectl exec, wsl.exe --exec). 'auto': 'shell' when the launcher's program is ssh.
 */
export function quotesForShell(launcher, quote = 'auto') {
  if (quote !== 'auto') return quote === 'shell';
  const program = launcher[0].split(/[\\/]/).pop(); // either separator: a Windows host's C:\…\ssh.exe
  return SHELL_LAUNCHERS.has(program.toLowerCase().replace(/\.exe$/, ''));
}

/** `arg` as one word of a POSIX shell: single-quoted, a quote as '\''. */
export function shellWord(arg) {
  return `'${arg.replaceAll("'", "'\\''")}'`;
}

/**
 * The argv to spawn: `program` and `args`, after the launcher if there is one (quoted for the remote shell
 * when quotesForShell says so).
 */
export function launchCommand(launcher, quote, program, args) {
  const argv = [program, ...args];
  if (!launcher?.length) return argv;
  if (quotesForShell(launcher, quote)) return [...launcher, argv.map(shellWord).join(' ')];
  return [...launcher, ...argv];
}

/**
 * The build could not be put on (or found on) the far side: the installer's own words, or how the launcher
 * ended (`exitCode`, `stderr`).
 */
export class InstallError extends DshSearchError {
  constructor(message, { exitCode = null, stderr = '' } = {}) {
    super(message);
    this.name = 'InstallError';
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

function checkLauncher(launcher, quote) {
  if (
    launcher !== undefined &&
    launcher !== null &&
    !(Array.isArray(launcher) && launcher.length > 0 && launcher.every((a) => typeof a === 'string') && launcher[0])
  ) {
    throw optionError('launcher', 'a non-empty array of strings (an argv prefix, never a shell string)', launcher);
  }
  if (quote !== undefined && !LAUNCHER_QUOTES.includes(quote)) {
    throw optionError('launcherQuote', "'auto', 'shell' or 'none'", quote);
  }
}

async function digest(path) {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha: hash.digest('hex'), size };
}

/**
 * Make sure the far side of `launcher` has this build and resolve with the path of its dsh-search there.
 * `build` is a directory holding dsh-search and dsh-search-rg built for the far side's platform (or the path
 * of that dsh-search). remote-install.sh runs through the launcher: when the build is in the far side's
 * per-user cache (checked by sha256) it answers at once; otherwise both files are streamed through the
 * channel, checked there by sha256 and by running `dsh-search --version`, and moved in. Nothing is
 * downloaded. Rejects with InstallError; `signal` stops the launcher (the far side drops what it got).
 */
export async function installRemote({ launcher, build, launcherQuote = 'auto', env, signal } = {}) {
  checkLauncher(launcher, launcherQuote);
  if (!launcher) throw optionError('launcher', 'a non-empty array of strings', launcher);
  if (typeof build !== 'string' || !build) throw optionError('build', 'the path of a build directory', build);
  let exe = resolve(build);
  try {
    if (statSync(exe).isDirectory()) exe = join(exe, 'dsh-search');
  } catch {
    // reported below, by name
  }
  const rg = join(dirname(exe), `${basename(exe)}-rg`);
  for (const [what, path] of [['dsh-search executable', exe], ['ripgrep sidecar', rg]]) {
    if (!isExecutableFile(path)) throw new InstallError(`the build to install has no ${what} at ${path}`);
  }
  const [exeSum, rgSum] = await Promise.all([digest(exe), digest(rg)]);
  const script = readFileSync(new URL('./remote-install.sh', import.meta.url), 'utf8');
  const args = ['-c', script, 'dsh-search-install', exeSum.sha, rgSum.sha, String(exeSum.size), String(rgSum.size)];
  const [program, ...rest] = launchCommand(launcher, launcherQuote, 'sh', args);
  const child = spawn(program, rest, { stdio: ['pipe', 'pipe', 'pipe'], env: env ?? process.env, signal });
  child.stdin.on('error', () => {}); // EPIPE when the far side gave up: its error line says why
  const stderr = [];
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    stderr.push(text);
    if (stderr.length > 50) stderr.shift();
  });
  const exited = new Promise((done) => child.once('close', (code, sig) => done({ code, sig })));
  let failed = null;
  await new Promise((done, fail) => {
    child.once('spawn', done);
    child.on('error', (err) => {
      failed = err; // no such launcher, or `signal` aborted it
      fail(err);
    });
  });
  let answer = null;
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (!line.startsWith(INSTALL_PREFIX)) continue; // not the installer's: a login shell's chatter, say
      const said = line.slice(INSTALL_PREFIX.length);
      const space = said.indexOf(' ');
      const word = space < 0 ? said : said.slice(0, space);
      const text = space < 0 ? '' : said.slice(space + 1);
      if (word === 'ready' || word === 'error') {
        answer = { word, text };
        break;
      }
      if (word === 'send') {
        try {
          await pipeline(createReadStream(exe), child.stdin, { end: false });
          await pipeline(createReadStream(rg), child.stdin);
        } catch {
          // the far side gave up reading: its error line says why
        }
      }
    }
  } finally {
    lines.close();
    child.stdin.end();
    if (!answer || answer.word !== 'ready') child.kill('SIGTERM');
  }
  const status = await exited;
  if (answer?.word === 'ready') return answer.text;
  if (failed) throw failed;
  if (answer?.word === 'error') throw new InstallError(answer.text, { exitCode: status.code, stderr: stderr.join('') });
  const tail = stderr.join('').trim();
  throw new InstallError(
    `the installer ended (status ${status.code ?? status.sig}) without saying the build is in place` +
      (status.code === 255 ? ' (255: the launcher could not connect)' : '') +
      (tail ? `: ${tail}` : ''),
    { exitCode: status.code, stderr: stderr.join('') },
  );
}

// -- the client --------------------------------------------------------------------------------------------

// A wait that can be called off: `promise` resolves with null after `ms` unless `cancel()` came first. Every
// wait of the client is called off once it is no longer needed, so that no timer keeps the host's process
// alive after a call or a failed start.
function timer(ms) {
  let handle;
  const promise = new Promise((done) => {
    handle = setTimeout(() => done(null), ms);
  });
  return { promise, cancel: () => clearTimeout(handle) };
}

const DEFAULTS = Object.freeze({
  launcherQuote: 'auto',
  cancelWaitMs: 5000,
  shutdownWaitMs: 10_000,
  exitWaitMs: 5000,
  termWaitMs: 6000,
  stderr: 'inherit',
  initialize: true,
  cancelOnClose: false,
});

const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);

function optionError(name, expected, value) {
  let shown;
  try {
    shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  } catch {
    shown = typeof value;
  }
  return new TypeError(`${name} must be ${expected}, not ${shown}`);
}

// The options with undefined meaning "not given" (JavaScript's convention), each checked for its type.
function checkedOptions(options) {
  if (!isObject(options)) throw optionError('the options', 'an object', options);
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const o = { ...DEFAULTS, ...given };
  if (!('sampleOverCapGlobResults' in given)) {
    throw new TypeError('sampleOverCapGlobResults is required (true or false; null only if args or --config set it)');
  }
  if (o.sampleOverCapGlobResults !== null && typeof o.sampleOverCapGlobResults !== 'boolean') {
    throw optionError('sampleOverCapGlobResults', 'true, false or null', o.sampleOverCapGlobResults);
  }
  if (o.executable !== undefined && o.executable !== null && typeof o.executable !== 'string') {
    throw optionError('executable', 'a string', o.executable);
  }
  checkLauncher(o.launcher, o.launcherQuote);
  if (o.remote !== undefined && typeof o.remote !== 'boolean') throw optionError('remote', 'true or false', o.remote);
  if (o.install !== undefined) {
    if (typeof o.install !== 'string' || !o.install) throw optionError('install', 'the path of a build directory', o.install);
    if (!o.launcher) throw new TypeError('install needs a launcher: it puts the build on the far side of the launcher');
    if (o.executable) throw new TypeError('pass executable or install, not both: install runs the build it installed');
  }
  for (const name of ['workdir', 'spillDir']) {
    if (o[name] !== undefined && typeof o[name] !== 'string') throw optionError(name, 'a string', o[name]);
  }
  if (o.args !== undefined && !(Array.isArray(o.args) && o.args.every((arg) => typeof arg === 'string'))) {
    throw optionError('args', 'an array of strings', o.args);
  }
  if (o.env !== undefined && !isObject(o.env)) throw optionError('env', 'an object', o.env);
  if (!['inherit', 'ignore', 'capture'].includes(o.stderr)) {
    throw optionError('stderr', "'inherit', 'ignore' or 'capture'", o.stderr);
  }
  if (o.onNotification !== undefined && typeof o.onNotification !== 'function') {
    throw optionError('onNotification', 'a function', o.onNotification);
  }
  for (const name of ['initialize', 'cancelOnClose']) {
    if (typeof o[name] !== 'boolean') throw optionError(name, 'true or false', o[name]);
  }
  if (
    o.clientInfo !== undefined &&
    !(isObject(o.clientInfo) && typeof o.clientInfo.name === 'string' && typeof o.clientInfo.version === 'string')
  ) {
    throw optionError('clientInfo', 'an object {name, version} of strings', o.clientInfo);
  }
  for (const name of ['cancelWaitMs', 'shutdownWaitMs', 'exitWaitMs', 'termWaitMs']) {
    if (typeof o[name] !== 'number' || !Number.isFinite(o[name]) || o[name] < 0) {
      throw optionError(name, 'a number of milliseconds (0 or more)', o[name]);
    }
  }
  return o;
}

function checkCallOptions(method, { signal, onProgress }) {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw optionError(`${method}: signal`, 'an AbortSignal', signal);
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw optionError(`${method}: onProgress`, 'a function', onProgress);
  }
}

function withoutUndefined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

function chunk(sessionId, data) {
  if (typeof data === 'string') return { sessionId, data };
  return { sessionId, dataBase64: Buffer.from(data).toString('base64') };
}

// Call a host's callback; what it throws or rejects with must not break the connection.
function callSafely(callback, ...args) {
  try {
    Promise.resolve(callback(...args)).catch(() => {});
  } catch {
    // ignored, as documented
  }
}

function locatorOf(spill) {
  return typeof spill === 'string' ? spill : spill.locator;
}

export class Client {
  /**
   * Spawn the daemon and (unless `initialize: false`) initialize the session. See index.d.ts for the
   * options. Throws StartupError if the daemon exits before answering initialize.
   */
  static async start(options = {}) {
    const client = new Client(options);
    await client.#start();
    return client;
  }

  #options;
  #child = null;
  #connection = null;
  #stderrLines = [];
  #exited; // Promise<{code, signal}>, settled when the process has exited
  #exitStatus = null;
  #gone; // Promise that rejects with ClosedError once the connection has closed
  #closed = false; // no more requests (shutdown/exit sent, or the connection is gone)
  #closing = null; // the close() in progress
  #shutDown = false;
  #pending = 0;
  #running = new Set(); // the CancellationTokenSources of the calls waiting for an answer
  #progress = new Map(); // progressToken → the onProgress of the call that sent it
  #progressTokens = 0;
  /**
   * The daemon's answer to `initialize`: `serverInfo`, `protocolVersion`, `ripgrep: {path, version}`,
   * `instructions` and `guidance` (texts for a system prompt) and `config`, the effective configuration
   * (timeoutMs, spillDir, …; the daemon's --workdir is not among its keys). null with `initialize: false`.
   */
  initializeResult = null;

  constructor(options = {}) {
    this.#options = checkedOptions(options);
  }

  /** The daemon's process id (of the PyInstaller onefile launcher); with a `launcher`, the launcher's. */
  get pid() {
    return this.#child?.pid ?? null;
  }

  /** `{code, signal}` once the daemon has exited, else null. */
  get exitStatus() {
    return this.#exitStatus;
  }

  /** Settles with `{code, signal}` when the daemon process exits. */
  get exited() {
    return this.#exited;
  }

  /** The last lines the daemon wrote to stderr (with `stderr: 'capture'`). */
  get stderrTail() {
    return this.#stderrLines.join('');
  }

  /** How many requests are waiting for an answer. */
  get pending() {
    return this.#pending;
  }

  async #start() {
    const o = this.#options;
    let executable;
    if (o.install) {
      executable = await installRemote({ launcher: o.launcher, build: o.install, launcherQuote: o.launcherQuote, env: o.env });
    } else if (o.launcher) {
      executable = o.executable || 'dsh-search'; // the far side's path, or a name on its PATH: not looked up here
    } else {
      executable = findExecutable(o.executable, o.env ?? process.env);
    }
    const args = ['--framing', 'lsp'];
    if (o.sampleOverCapGlobResults !== null) {
      args.push('--sample-over-cap-glob-results', o.sampleOverCapGlobResults ? 'true' : 'false');
    }
    if (o.workdir) args.push(`--workdir=${o.workdir}`); // one argument: a directory may start with "-"
    if (o.spillDir) args.push(`--spill-dir=${o.spillDir}`);
    if (o.remote ?? Boolean(o.launcher)) args.push('--remote', 'true');
    args.push(...(o.args ?? []));
    const stderr = { inherit: 'inherit', ignore: 'ignore', capture: 'pipe' }[o.stderr];
    const [program, ...argv] = launchCommand(o.launcher, o.launcherQuote, executable, args);

    // stdin/stdout carry the protocol. Node creates the pipes close-on-exec, so no other child holds a copy:
    // when this process dies the daemon (or its launcher) sees EOF and a closed stdout, and exits.
    const child = spawn(program, argv, { stdio: ['pipe', 'pipe', stderr], env: o.env });
    this.#child = child;
    this.#exited = new Promise((done) =>
      child.once('exit', (code, signal) => {
        this.#exitStatus = { code, signal };
        done(this.#exitStatus);
      }),
    );
    child.stdin.on('error', () => {}); // EPIPE once the daemon has gone: the exit status tells the story
    if (child.stderr) {
      let partial = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (text) => {
        const lines = (partial + text).split('\n');
        partial = lines.pop().slice(-65536);
        for (const line of lines) this.#stderrLines.push(`${line}\n`);
        this.#stderrLines.splice(0, Math.max(0, this.#stderrLines.length - STDERR_LINES));
      });
      child.stderr.on('end', () => partial && this.#stderrLines.push(partial));
    }
    await new Promise((done, fail) => {
      child.once('spawn', done);
      child.once('error', fail); // no such file, not executable, …
    });

    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    this.#connection = connection;
    this.#gone = new Promise((_, fail) => {
      connection.onClose(() => {
        this.#closed = true;
        // vscode-jsonrpc hands received messages over from a queue, one per event-loop turn: let the
        // answers that arrived before the end be delivered before failing the rest.
        setTimeout(() => fail(new ClosedError("the daemon's stdout ended before the answer came", this.#details())), 50);
      });
    });
    this.#gone.catch(() => {});
    connection.onNotification((method, params) => this.#notify(method, params));
    connection.onUnhandledProgress((params) => this.#notify('$/progress', params));
    connection.onError(() => {}); // a broken pipe: onClose follows
    connection.listen();

    if (o.initialize) {
      try {
        const raw = await this.#call('initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: o.clientInfo ?? { name: 'dsh-search-client-node', version: '0.1.0' },
        });
        this.initializeResult = raw;
      } catch (err) {
        if (err instanceof ClosedError) {
          const wait = timer(o.exitWaitMs);
          const status = await Promise.race([this.#exited, wait.promise]);
          wait.cancel();
          await this.close();
          const code = status?.code ?? null;
          const hint = (o.launcher ? LAUNCHER_EXIT_HINTS : EXIT_HINTS).get(code);
          const tail = this.stderrTail.trim();
          const what = status ? `exited with ${status.signal ? `signal ${status.signal}` : `status ${code}`}` : 'stopped talking';
          throw new StartupError(
            `dsh-search ${what} before answering initialize${hint ? ` (${hint})` : ''}${tail ? `: ${tail}` : ''}`,
            this.#details(),
          );
        }
        await this.close();
        throw err;
      }
    }
  }

  #details() {
    return {
      exitCode: this.#exitStatus?.code ?? null,
      signal: this.#exitStatus?.signal ?? null,
      stderr: this.stderrTail,
    };
  }

  #notify(method, params) {
    if (method === 'notifications/progress') {
      const onProgress = this.#progress.get(params?.progressToken);
      if (onProgress) {
        const { progress, message } = params;
        callSafely(onProgress, { progress, message });
      }
    }
    const handler = this.#options.onNotification;
    if (handler) callSafely(handler, method, params);
  }

  /** Send a notification (no answer). */
  async notify(method, params) {
    if (this.#closed) throw new ClosedError('the client is closed', this.#details());
    await (params === undefined
      ? this.#connection.sendNotification(method)
      : this.#connection.sendNotification(method, params));
  }

  /**
   * Send any request and resolve with its result. Rejects with RequestError for an error answer, AbortedError
   * when `signal` fires (after the daemon confirmed the cancellation, or cancelWaitMs), ClosedError when the
   * daemon goes away.
   */
  async request(method, params, { signal } = {}) {
    checkCallOptions(method, { signal });
    return this.#call(method, params, signal);
  }

  // A typed search with an optional onProgress: the params carry `_meta.progressToken`, and the daemon's
  // notifications/progress for that token go to onProgress until the call is over.
  async #search(method, params, { signal, onProgress }) {
    checkCallOptions(method, { signal, onProgress });
    if (!onProgress) return this.#call(method, params, signal);
    const token = `dsh-search-client-${++this.#progressTokens}`;
    this.#progress.set(token, onProgress);
    try {
      return await this.#call(method, { ...params, _meta: { progressToken: token } }, signal);
    } finally {
      this.#progress.delete(token);
    }
  }

  async #call(method, params, signal) {
    if (this.#closed) throw new ClosedError('the client is closed', this.#details());
    if (signal?.aborted) throw new AbortedError(method, signal.reason, null);
    const source = new CancellationTokenSource();
    this.#running.add(source);
    const sent =
      params === undefined
        ? this.#connection.sendRequest(method, source.token)
        : this.#connection.sendRequest(method, params, source.token);
    sent.catch(() => {}); // it may settle after we stopped waiting
    let onAbort;
    const aborted = new Promise((done) => {
      onAbort = () => done();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    const outcome = (promise) =>
      promise.then(
        (value) => ({ value }),
        (error) => ({ error }),
      );
    this.#pending++;
    try {
      const first = await Promise.race([outcome(sent), outcome(this.#gone), aborted.then(() => null)]);
      if (first === null) {
        // Aborted: vscode-jsonrpc sends `$/cancelRequest {id}`; the daemon stops the search (its ripgrep
        // process group) and answers -32800. Wait for that answer, within bounds.
        source.cancel();
        const wait = timer(this.#options.cancelWaitMs);
        const reply = await Promise.race([outcome(sent), outcome(this.#gone), wait.promise]);
        wait.cancel();
        const error = reply?.error instanceof ResponseError ? new RequestError(method, reply.error) : null;
        throw new AbortedError(method, signal.reason, error);
      }
      if ('error' in first) {
        if (first.error instanceof ClosedError) throw first.error;
        if (first.error instanceof ResponseError && !LIBRARY_CODES.has(first.error.code)) {
          throw new RequestError(method, first.error);
        }
        // vscode-jsonrpc's own failures (write error, disposed connection): the daemon is gone.
        throw new ClosedError(`${method}: ${first.error?.message ?? first.error}`, this.#details());
      }
      return first.value;
    } finally {
      this.#pending--;
      this.#running.delete(source);
      signal?.removeEventListener('abort', onAbort);
      source.dispose();
    }
  }

  // -- methods ---------------------------------------------------------------------------------------------

  /** Resolves with what the daemon answers: `{}`. */
  ping({ signal } = {}) {
    return this.request('ping', undefined, { signal });
  }

  /** The model-facing tools; the list may grow during a session (notifications/tools/list_changed). */
  async toolsList({ signal } = {}) {
    return (await this.request('tools/list', undefined, { signal })).tools;
  }

  /** MCP tools/call: a failed search is a result with isError: true, not an exception. */
  callTool(name, args, { cwd, sessionId, signal } = {}) {
    const meta = withoutUndefined({ cwd, sessionId });
    const params = { name, arguments: args };
    if (Object.keys(meta).length) params._meta = meta;
    return this.request('tools/call', params, { signal });
  }

  /** Files matching a glob pattern, oldest modification first (capped inline; see `spill`). */
  glob(pattern, { path, cwd, sessionId, signal, onProgress } = {}) {
    return this.#search('glob', withoutUndefined({ pattern, path, cwd, sessionId }), { signal, onProgress });
  }

  /** Lines matching a ripgrep regex, grouped by file (capped inline; see `spill`). */
  grep(pattern, { path, include, cwd, sessionId, signal, onProgress } = {}) {
    const params = withoutUndefined({ pattern, path, include, cwd, sessionId });
    return this.#search('grep', params, { signal, onProgress });
  }

  /** Search a terminal's retained scrollback, newest match first. */
  terminalSearch(sessionId, pattern, { regex, offset, limit, signal, onProgress } = {}) {
    const params = withoutUndefined({ sessionId, pattern, regex, offset, limit });
    return this.#search('terminal_search', params, { signal, onProgress });
  }

  /** Append terminal output (a string, or raw PTY bytes) to a session's scrollback; creates the session. */
  scrollbackAppend(sessionId, data, { signal } = {}) {
    return this.request('scrollback/append', chunk(sessionId, data), { signal });
  }

  /** The same as a notification: nothing is waited for. */
  scrollbackAppendNoWait(sessionId, data) {
    return this.notify('scrollback/append', chunk(sessionId, data));
  }

  /** A page of retained output in terminal_read's coordinates (offset 0 = the newest line). */
  scrollbackRead(sessionId, { offset, count, signal } = {}) {
    return this.request('scrollback/read', withoutUndefined({ sessionId, offset, count }), { signal });
  }

  /** Free a session's scrollback; false if there was none. */
  async scrollbackClose(sessionId, { signal } = {}) {
    return (await this.request('scrollback/close', { sessionId }, { signal })).closed;
  }

  /** Lines offset..offset+limit-1 (1-based; defaults 1 and 2000) of a saved complete result. */
  spillRead(spill, { offset, limit, signal } = {}) {
    return this.request('spill/read', withoutUndefined({ locator: locatorOf(spill), offset, limit }), { signal });
  }

  /** Every page of a saved complete result: `for await (const page of client.spillPages(result.spill))`. */
  async *spillPages(spill, { offset = 1, limit = 2000, signal } = {}) {
    let next = offset;
    while (next !== null && next !== undefined) {
      const page = await this.spillRead(spill, { offset: next, limit, signal });
      yield page;
      next = page.nextOffset;
    }
  }

  /** `shutdown`: the daemon finishes the searches already running, then answers. close() does this too. */
  async shutdown() {
    const answer = await this.#call('shutdown');
    this.#shutDown = true;
    return answer;
  }

  /**
   * Stop the daemon and release everything; resolves with its `{code, signal}`. Idempotent. The order leaks
   * nothing: shutdown (bounded by shutdownWaitMs), the exit notification, close stdin and wait exitWaitMs;
   * then SIGTERM (the daemon aborts its searches, kills their ripgrep process groups and exits within
   * graceMs + 1 s) and wait termWaitMs; SIGKILL only as the very last resort, because a SIGKILLed onefile
   * launcher leaves its _MEI* directory behind and orphans the daemon.
   *
   * By default `shutdown` lets the calls still running finish. With `cancel: true` (default: the
   * `cancelOnClose` option) they are cancelled first ($/cancelRequest each) and reject with the daemon's
   * -32800 answer, a RequestError with code SEARCH_ABORTED.
   */
  async close({ cancel } = {}) {
    if (cancel !== undefined && typeof cancel !== 'boolean') throw optionError('close: cancel', 'true or false', cancel);
    if (cancel ?? this.#options.cancelOnClose) {
      for (const source of this.#running) source.cancel();
    }
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close() {
    const child = this.#child;
    if (!child) return null;
    const o = this.#options;
    const within = async (ms) => {
      let timer;
      const timeout = new Promise((done) => {
        timer = setTimeout(() => done(null), ms);
      });
      try {
        return await Promise.race([this.#exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    };
    if (!this.#closed && this.#exitStatus === null) {
      if (!this.#shutDown) {
        // `shutdown` waits for the searches still running; past shutdownWaitMs, `exit` aborts them.
        let timer;
        const late = new Promise((done) => {
          timer = setTimeout(done, o.shutdownWaitMs);
        });
        try {
          await Promise.race([this.#call('shutdown'), late]);
        } catch {
          // the daemon is gone: go on
        } finally {
          clearTimeout(timer);
        }
      }
      try {
        await this.notify('exit');
      } catch {
        // gone already
      }
    }
    this.#closed = true;
    child.stdin.end();
    let status = await within(o.exitWaitMs);
    if (status === null) {
      child.kill('SIGTERM');
      status = await within(o.termWaitMs);
    }
    if (status === null) {
      child.kill('SIGKILL'); // the very last resort
      status = await this.#exited;
    }
    this.#connection.dispose();
    child.stdout.destroy();
    child.stderr?.destroy();
    return status;
  }

  async [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    await this.close();
  }
}
