// dsh-search-client against the frozen executable: DSH_SEARCH_EXE names it (scripts/test sets it), and
// DSH_SLOW_CORPUS may name a directory that keeps ripgrep busy (generated here otherwise).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import {
  AbortedError,
  Client,
  REQUEST_CANCELLED,
  RequestError,
  StartupError,
  findExecutable,
} from '../index.js';
// What is newer than the first release, looked up at run time so that each test fails on its own.
import * as lib from '../index.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const EXE = process.env.DSH_SEARCH_EXE;
const SKIP = EXE ? false : 'set DSH_SEARCH_EXE to a built dsh-search (scripts/build) to run these tests';
const SLOW_PATTERN = String.raw`(?:\w+\W){1,20}?\w{9}\b`;

let scratch;
let tree;
let corpus;

function writeTree(root) {
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
    utimesSync(join(root, name), mtime, mtime);
    mtime += 60;
  }
}

function slowCorpus(root) {
  if (process.env.DSH_SLOW_CORPUS) return process.env.DSH_SLOW_CORPUS;
  mkdirSync(root, { recursive: true });
  const words = ['alpha', 'beta', 'gamma', 'delta', 'épsilon', 'zeta', 'ηta', 'theta'];
  const lines = [];
  for (let i = 0; i < 400_000; i++) {
    const line = [];
    for (let w = 0; w < 8; w++) line.push(words[(i * 7 + w * 13 + (i >> 3)) % words.length]);
    lines.push(line.join(' '));
  }
  const text = `${lines.join('\n')}\n`;
  for (let i = 0; i < 4; i++) writeFileSync(join(root, `slow-${i}.txt`), text);
  return root;
}

// The daemon's TMPDIR, where the onefile launcher unpacks itself and must clean up.
function daemonTmp() {
  const dir = join(scratch, 'tmp');
  mkdirSync(dir, { recursive: true });
  return dir;
}

function start(options = {}) {
  return Client.start({
    executable: EXE,
    sampleOverCapGlobResults: true,
    workdir: tree,
    spillDir: join(scratch, 'spill'),
    env: { ...process.env, TMPDIR: daemonTmp() },
    ...options,
  });
}

// Run test/exit-check.js as a host of its own; resolves with what it printed and whether it was still
// running 3 s after it printed "done" (then it is killed: a timer of the client kept it alive).
function runHost(args) {
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(HERE, 'exit-check.js'), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, TMPDIR: daemonTmp() },
    });
    let out = '';
    let lingered = false;
    let bound = null;
    const guard = setTimeout(() => child.kill('SIGTERM'), 120_000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text) => {
      out += text;
      if (bound === null && out.includes('done ')) {
        bound = setTimeout(() => {
          lingered = true;
          child.kill('SIGTERM');
        }, 3000);
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      clearTimeout(bound);
      done({ out: out.trim(), code, signal, lingered });
    });
  });
}

// Resolves on the first notifications/progress an onNotification callback sees.
function firstProgress() {
  let seen;
  const promise = new Promise((done) => {
    seen = done;
  });
  const onNotification = (method, params) => {
    if (method === 'notifications/progress') seen(params);
  };
  return { promise, onNotification };
}

function gone(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

describe('dsh-search-client', { skip: SKIP }, () => {
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'dsh-node-client-'));
    tree = join(scratch, 'tree');
    writeTree(tree);
    corpus = slowCorpus(join(scratch, 'slow'));
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('typed results', async () => {
    const client = await start();
    try {
      const info = client.initializeResult;
      assert.equal(info.serverInfo.name, 'dsh-search');
      assert.equal(info.ripgrep.version, '15.2.0');
      assert.equal(info.config.sampleOverCapGlobResults, true);

      const [globbed, grepped] = await Promise.all([client.glob('**/*.js'), client.grep('TODO')]);
      assert.equal(globbed.text, 'src/app.js\nsrc/util.js');
      assert.deepEqual(globbed.meta, { shape: 'paths', paths: ['src/app.js', 'src/util.js'], truncated: false, total: 2 });
      assert.equal(globbed.spill, null);
      assert.match(grepped.text, /^Found 2 matches/);
      assert.deepEqual(grepped.meta.files.map((f) => f.path), ['docs/notes.md', 'src/app.js']);
      const other = await client.grep('export', { path: 'src', include: '*.js', cwd: tree });
      assert.deepEqual(other.meta.files.map((f) => f.path), ['src/util.js']);

      const appended = await client.scrollbackAppend('term-1', '$ make\r\n\x1b[31merror: missing semicolon\x1b[0m\r');
      assert.deepEqual(appended, { totalLines: 3, truncated: false });
      await client.scrollbackAppendNoWait('term-1', Buffer.from('\nbuild failed\r\n$ make test\r\nerror: 2 tests failed\r\n'));
      const found = await client.terminalSearch('term-1', 'error');
      assert.deepEqual(found.matches, [
        { offset: 1, line: 'error: 2 tests failed' },
        { offset: 4, line: 'error: missing semicolon' },
      ]);
      assert.equal(found.matchCount, 2);
      const regex = await client.terminalSearch('term-1', String.raw`^\$ make\b`, { regex: true, limit: 1 });
      assert.equal(regex.matches.length, 1);
      assert.equal(regex.truncated, true);
      const page = await client.scrollbackRead('term-1', { offset: 1, count: 2 });
      assert.equal(page.text, '$ make test\nerror: 2 tests failed');
      assert.equal(await client.scrollbackClose('term-1'), true);
      assert.equal(await client.scrollbackClose('term-1'), false);

      const tools = (await client.toolsList()).map((t) => t.name);
      assert.ok(tools.includes('glob') && tools.includes('grep'));
      const mcp = await client.callTool('grep', { pattern: '(' });
      assert.equal(mcp.isError, true);
      assert.deepEqual(await client.ping(), {}); // what the daemon answers
    } finally {
      assert.deepEqual(await client.close(), { code: 0, signal: null });
    }
  });

  test('the error table is the daemon\'s own (rpc.discover), kind for kind and code for code', async () => {
    const client = await start();
    try {
      const doc = await client.request('rpc.discover');
      const published = {};
      let cancellable = 0;
      for (const method of doc.methods) {
        for (const error of method.errors ?? []) {
          if (error.code === REQUEST_CANCELLED) {
            assert.equal(error.message, 'Request cancelled');
            cancellable++;
            continue;
          }
          assert.equal(published[error.message] ?? error.code, error.code, error.message);
          published[error.message] = error.code;
        }
      }
      assert.ok(cancellable > 0);
      assert.ok(Object.isFrozen(lib.ERROR_KINDS));
      assert.deepEqual({ ...lib.ERROR_KINDS }, published);
    } finally {
      await client.close();
    }
  });

  test('options are type-checked when the client is made, call options when the call is made', async () => {
    const base = { executable: EXE, sampleOverCapGlobResults: true };
    const wrong = [
      [{ sampleOverCapGlobResults: 'false' }, /sampleOverCapGlobResults/],
      [{ sampleOverCapGlobResults: 0 }, /sampleOverCapGlobResults/],
      [{ sampleOverCapGlobResults: undefined }, /sampleOverCapGlobResults is required/],
      [{ executable: 42 }, /executable/],
      [{ workdir: 7 }, /workdir/],
      [{ spillDir: {} }, /spillDir/],
      [{ args: '--timeout-ms 5' }, /args/],
      [{ args: ['--timeout-ms', 5] }, /args/],
      [{ env: 'PATH=/bin' }, /env/],
      [{ stderr: 'pipe' }, /stderr/],
      [{ onNotification: 'console.log' }, /onNotification/],
      [{ initialize: 'yes' }, /initialize/],
      [{ clientInfo: 'me' }, /clientInfo/],
      [{ cancelWaitMs: '5000' }, /cancelWaitMs/],
      [{ shutdownWaitMs: -1 }, /shutdownWaitMs/],
      [{ exitWaitMs: Number.NaN }, /exitWaitMs/],
      [{ termWaitMs: null }, /termWaitMs/],
      [{ cancelOnClose: 'true' }, /cancelOnClose/],
    ];
    for (const [options, message] of wrong) {
      assert.throws(() => new Client({ ...base, ...options }), { name: 'TypeError', message }, JSON.stringify(options));
      await assert.rejects(Client.start({ ...base, ...options }), { name: 'TypeError', message });
    }
    const client = await start();
    try {
      await assert.rejects(client.grep('x', { onProgress: 'yes' }), { name: 'TypeError', message: /onProgress/ });
      await assert.rejects(client.glob('x', { signal: { aborted: false } }), { name: 'TypeError', message: /signal/ });
      await assert.rejects(client.close({ cancel: 'yes' }), { name: 'TypeError', message: /cancel/ });
      assert.equal(client.pending, 0);
      assert.deepEqual(await client.ping(), {});
    } finally {
      await client.close();
    }
  });

  test('an option given as undefined means its default (stderr included)', async () => {
    const client = await start({ stderr: undefined, cancelWaitMs: undefined, exitWaitMs: undefined, args: undefined });
    try {
      assert.deepEqual(await client.ping(), {});
    } finally {
      assert.deepEqual(await client.close(), { code: 0, signal: null });
    }
  });

  test('errors are RequestErrors with code, rpcCode and text', async () => {
    const client = await start();
    try {
      await assert.rejects(client.grep('('), (err) => {
        assert.ok(err instanceof RequestError);
        assert.equal(err.code, 'SEARCH_INVALID_PATTERN');
        assert.equal(err.rpcCode, 1001);
        assert.match(err.text, /^Error: grep pattern rejected by ripgrep: /);
        return true;
      });
      await assert.rejects(client.glob('*', { cwd: join(scratch, 'missing') }), { code: 'SEARCH_FAILED', rpcCode: 1002 });
      await assert.rejects(client.spillRead(join(scratch, 'nope.txt')), { code: 'INVALID_ARGS', rpcCode: -32602 });
      await assert.rejects(client.request('no/such/method'), { code: 'METHOD_NOT_FOUND', rpcCode: -32601 });
      await client.ping();
    } finally {
      await client.close();
    }
  });

  test('AbortSignal cancels the search: $/cancelRequest, then the -32800 answer', async () => {
    const client = await start();
    try {
      const controller = new AbortController();
      const slow = client.grep(SLOW_PATTERN, { cwd: corpus, signal: controller.signal });
      setTimeout(() => controller.abort(), 500);
      await assert.rejects(slow, (err) => {
        assert.ok(err instanceof AbortedError, err);
        assert.equal(err.name, 'AbortError');
        assert.ok(err.reply instanceof RequestError);
        assert.equal(err.reply.rpcCode, REQUEST_CANCELLED);
        assert.equal(err.reply.code, 'SEARCH_ABORTED');
        assert.equal(err.reply.text, 'Error: grep was aborted before completion (tool timeout or caller cancellation)');
        return true;
      });
      assert.equal(client.pending, 0);

      // A deadline with AbortSignal.timeout: the same path; the cause is the TimeoutError.
      await assert.rejects(client.grep(SLOW_PATTERN, { cwd: corpus, signal: AbortSignal.timeout(300) }), (err) => {
        assert.ok(err instanceof AbortedError);
        assert.equal(err.cause.name, 'TimeoutError');
        assert.equal(err.reply?.rpcCode, REQUEST_CANCELLED);
        return true;
      });
      // cancelReply: the daemon's answer, from the AbortedError or from an error that wraps it.
      const caught = await client.grep(SLOW_PATTERN, { cwd: corpus, signal: AbortSignal.timeout(300) }).catch((e) => e);
      assert.ok(caught instanceof AbortedError);
      assert.equal(lib.cancelReply(caught), caught.reply);
      assert.equal(lib.cancelReply(caught).code, 'SEARCH_ABORTED');
      assert.equal(lib.cancelReply(new Error('the host gave up', { cause: caught })), caught.reply);
      assert.equal(lib.cancelReply(new Error('unrelated')), null);
      assert.equal(lib.cancelReply(undefined), null);
      // Already aborted: nothing is sent.
      await assert.rejects(client.ping({ signal: AbortSignal.abort() }), { name: 'AbortError', reply: null });
      assert.equal((await client.glob('**/*.md')).meta.total, 2);
    } finally {
      assert.deepEqual(await client.close(), { code: 0, signal: null });
    }
  });

  test('a cancelled call or a failed start leaves no timer behind: the host exits at once', async () => {
    const aborted = await runHost(['abort', EXE, corpus, SLOW_PATTERN]);
    assert.match(aborted.out, /^done AbortError -32800 exit=0 /);
    assert.equal(aborted.lingered, false, `still running 3 s after: ${aborted.out}`);
    assert.equal(aborted.code, 0);

    const lonely = join(scratch, 'lonely-exit', 'dsh-search');
    mkdirSync(dirname(lonely), { recursive: true });
    copyFileSync(EXE, lonely);
    const failed = await runHost(['startup', lonely]);
    assert.match(failed.out, /^done StartupError 3 /);
    assert.equal(failed.lingered, false, `still running 3 s after: ${failed.out}`);
    assert.equal(failed.code, 0);
  });

  test('onProgress of a typed call gets the daemon\'s progress reports, only while it runs', async () => {
    const client = await start();
    try {
      const reports = [];
      const controller = new AbortController();
      const signal = controller.signal;
      const onProgress = (report) => {
        reports.push(report);
        controller.abort(); // the first report is enough
      };
      await assert.rejects(client.grep(SLOW_PATTERN, { cwd: corpus, signal, onProgress }), (err) => {
        assert.ok(err instanceof AbortedError, err);
        assert.equal(err.reply?.rpcCode, REQUEST_CANCELLED);
        return true;
      });
      assert.ok(reports.length >= 1, 'no progress report');
      assert.equal(typeof reports[0].progress, 'number');
      assert.match(reports[0].message, /^grep: (\d+ matches in \d+ files so far( \(walking the tree: .+\))?|waiting for a free search slot)$/);
      const count = reports.length;
      assert.equal((await client.glob('**/*.md', { onProgress })).meta.total, 2); // fast: no report
      assert.equal(reports.length, count);
    } finally {
      await client.close();
    }
  });

  test('close({ cancel: true }) and cancelOnClose cancel the running calls instead of waiting for them', async () => {
    for (const how of ['argument', 'option']) {
      const progress = firstProgress();
      const client = await start({
        shutdownWaitMs: 120_000,
        cancelOnClose: how === 'option' ? true : undefined,
        onNotification: progress.onNotification,
      });
      const slow = client.request('grep', { pattern: SLOW_PATTERN, cwd: corpus, _meta: { progressToken: how } });
      slow.catch(() => {});
      await progress.promise; // the search runs
      const status = await (how === 'option' ? client.close() : client.close({ cancel: true }));
      assert.deepEqual(status, { code: 0, signal: null });
      await assert.rejects(slow, (err) => {
        assert.ok(err instanceof RequestError, err);
        assert.equal(err.rpcCode, REQUEST_CANCELLED, how); // $/cancelRequest's answer
        assert.equal(err.code, 'SEARCH_ABORTED');
        return true;
      });
    }
  });

  test('spill pager over a capped grep', async () => {
    writeFileSync(join(tree, 'many.txt'), Array.from({ length: 600 }, (_, i) => `hit ${i}\n`).join(''));
    const client = await start();
    try {
      const found = await client.grep('^hit', { include: 'many.txt' });
      assert.ok(found.spill);
      assert.equal(found.meta.total, 600);
      const pages = [];
      for await (const page of client.spillPages(found.spill, { limit: 100 })) pages.push(page);
      assert.ok(pages.length > 1);
      assert.deepEqual(pages.map((p) => p.startLine), pages.map((_, i) => 1 + 100 * i));
      assert.equal(pages.at(-1).nextOffset, null);
      const text = pages.map((p) => p.text).join('\n');
      assert.equal(text.split('\n').length, pages.at(-1).totalLines);
      for (let i = 0; i < 600; i++) assert.ok(text.includes(`hit ${i}\n`) || text.endsWith(`hit ${i}`), i);
      const middle = await client.spillRead(found.spill.locator, { offset: 5, limit: 3 });
      assert.deepEqual([middle.startLine, middle.endLine], [5, 7]);
    } finally {
      await client.close();
    }
  });

  test('answers longer than 64 KiB on one line', async () => {
    const longLine = `NEEDLE ${'x'.repeat(300_000)}`;
    writeFileSync(join(tree, 'long.txt'), `${longLine}\n`);
    const client = await start({ args: ['--grep-max-line-bytes', '1000000', '--search-meta-max-bytes', '4000000'] });
    try {
      const found = await client.grep('NEEDLE', { include: 'long.txt' });
      assert.equal(found.meta.files[0].matches[0].line, longLine);
      await client.scrollbackAppend('big', `${longLine}\n`);
      assert.equal((await client.scrollbackRead('big', { offset: 1, count: 1 })).text, longLine);
    } finally {
      await client.close();
    }
  });

  test('close() is graceful, idempotent and leaves nothing behind', async () => {
    const client = await start();
    const pid = client.pid;
    await client.ping();
    const [first, second] = await Promise.all([client.close(), client.close()]);
    assert.deepEqual(first, { code: 0, signal: null });
    assert.equal(first, second);
    assert.ok(gone(pid));
    await assert.rejects(client.ping(), { name: 'ClosedError' });
    assert.deepEqual(readdirSync(daemonTmp()), []); // the launcher removed its _MEI* directory
  });

  test('close() with a search still running is bounded', async () => {
    const client = await start({ shutdownWaitMs: 500 });
    const slow = client.grep(SLOW_PATTERN, { cwd: corpus });
    slow.catch(() => {});
    await new Promise((done) => setTimeout(done, 300));
    assert.deepEqual(await client.close(), { code: 0, signal: null });
    await assert.rejects(slow, (err) => err.code === 'SEARCH_ABORTED' || err.name === 'ClosedError');
  });

  test('StartupError when the sidecar is missing (exit 3)', async () => {
    const lonely = join(scratch, 'lonely', 'dsh-search');
    mkdirSync(dirname(lonely), { recursive: true });
    copyFileSync(EXE, lonely);
    await assert.rejects(start({ executable: lonely, stderr: 'capture' }), (err) => {
      assert.ok(err instanceof StartupError, err);
      assert.equal(err.exitCode, 3);
      assert.ok(err.stderr.includes(`dsh-search: ripgrep sidecar ${lonely}-rg is missing`), err.stderr);
      assert.match(err.message, /exited with status 3 .*sidecar/);
      return true;
    });
    await assert.rejects(start({ sampleOverCapGlobResults: null, stderr: 'capture' }), { name: 'StartupError', exitCode: 2 });
  });

  test('findExecutable: argument, then DSH_SEARCH_EXE, then PATH', () => {
    assert.equal(findExecutable('/x/dsh-search', {}), '/x/dsh-search');
    assert.equal(findExecutable(undefined, { DSH_SEARCH_EXE: '/y/dsh-search' }), '/y/dsh-search');
    assert.equal(findExecutable(null, { PATH: `/nonexistent:${dirname(EXE)}` }), join(dirname(EXE), 'dsh-search'));
    assert.throws(() => findExecutable(undefined, { PATH: '/nonexistent' }), /DSH_SEARCH_EXE/);
  });

  test('findExecutable: a bare name is looked up on PATH, never in the current directory', () => {
    const here = mkdtempSync(join(tmpdir(), 'dsh-cwd-'));
    const planted = join(here, 'dsh-search');
    writeFileSync(planted, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const cwd = process.cwd();
    process.chdir(here);
    try {
      for (const env of [{ PATH: '/nonexistent' }, { PATH: `.:${here}x:` }, { PATH: '' }]) {
        assert.throws(() => findExecutable(undefined, env), /dsh-search not found on PATH/);
        assert.throws(() => findExecutable('dsh-search', env), /not found on PATH/);
        assert.throws(() => findExecutable(undefined, { ...env, DSH_SEARCH_EXE: 'dsh-search' }), /not found/);
      }
      assert.equal(findExecutable('./dsh-search', {}), planted); // a path with a directory: taken as given
      assert.equal(findExecutable('dsh-search', { PATH: `/nonexistent:${here}` }), planted);
    } finally {
      process.chdir(cwd);
      rmSync(here, { recursive: true, force: true });
    }
  });
});

describe('launchers', () => {
  test('the daemon argv goes after the launcher, quoted for the remote shell behind ssh only', () => {
    const args = ['--workdir=/a b', "it's", '$HOME', 'two\nlines', '-x', ''];
    assert.deepEqual(lib.launchCommand(null, 'auto', 'dsh-search', args), ['dsh-search', ...args]);
    const docker = ['docker', 'exec', '-i', 'ctr'];
    assert.deepEqual(lib.launchCommand(docker, 'auto', 'dsh-search', args), [...docker, 'dsh-search', ...args]);
    const quoted = "'dsh-search' '--workdir=/a b' 'it'\\''s' '$HOME' 'two\nlines' '-x' ''";
    for (const ssh of [['ssh', '-T', 'host'], ['/usr/bin/ssh', 'host'], ['C:\\ssh\\SSH.EXE', 'host']]) {
      assert.deepEqual(lib.launchCommand(ssh, 'auto', 'dsh-search', args), [...ssh, quoted]);
    }
    assert.deepEqual(lib.launchCommand(docker, 'shell', 'dsh-search', args), [...docker, quoted]);
    assert.deepEqual(lib.launchCommand(['ssh', 'h'], 'none', 'x', ['a b']), ['ssh', 'h', 'x', 'a b']);
  });

  test('quoted arguments reach the program intact through a shell', async () => {
    // A stand-in for ssh: like sshd, it joins the command's words with spaces and hands them to sh -c.
    const bin = mkdtempSync(join(tmpdir(), 'dsh-launcher-'));
    writeFileSync(join(bin, 'ssh'), '#!/bin/sh\nshift\nexec sh -c "$*"\n', { mode: 0o755 });
    const args = ["a b", "it's", '"dq"', '$HOME `id` $(id)', 'two\nlines', '-x', '--y=-z', '', 'back\\slash', '*', 'é'];
    const argv = lib.launchCommand([join(bin, 'ssh'), 'host'], 'auto', 'printf', ['%s\\0', ...args]);
    const out = await new Promise((done, fail) => {
      const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
      const chunks = [];
      child.stdout.on('data', (c) => chunks.push(c));
      child.on('error', fail);
      child.on('close', () => done(Buffer.concat(chunks).toString()));
    });
    rmSync(bin, { recursive: true, force: true });
    assert.deepEqual(out.split('\0').slice(0, -1), args);
  });

  test('installRemote fills an empty cache, reuses a full one, and reports a cut transfer', async () => {
    // The installer runs through a local launcher (env sets the cache); a fake build stands in for the daemon.
    const root = mkdtempSync(join(tmpdir(), 'dsh-install-'));
    const build = join(root, 'build');
    mkdirSync(build);
    writeFileSync(join(build, 'dsh-search'), '#!/bin/sh\necho "dsh-search 0.0 (fake)"\n', { mode: 0o755 });
    writeFileSync(join(build, 'dsh-search-rg'), Buffer.alloc(300_000, 7), { mode: 0o755 });
    const cache = join(root, 'cache');
    const launcher = ['env', `XDG_CACHE_HOME=${cache}`];
    try {
      const path = await lib.installRemote({ launcher, build });
      assert.match(path, new RegExp(`^${cache}/dsh-search/builds/[0-9a-f]{64}/dsh-search$`));
      assert.equal(await lib.installRemote({ launcher, build }), path);
      const cut = join(root, 'cut');
      writeFileSync(cut, '#!/bin/sh\nhead -c 1000 | "$@"\n', { mode: 0o755 });
      rmSync(join(cache, 'dsh-search', 'builds'), { recursive: true });
      await assert.rejects(lib.installRemote({ launcher: [cut, ...launcher], build }), (err) => {
        assert.ok(err instanceof lib.InstallError, err);
        assert.match(err.message, /^the transfer was cut short: 1000 of \d+ bytes arrived$/);
        return true;
      });
      await assert.rejects(lib.installRemote({ launcher: ['sh', '-c', 'exit 255'], build }), {
        name: 'InstallError',
        exitCode: 255,
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('launcher options are checked when the client is made', () => {
    const base = { sampleOverCapGlobResults: true };
    assert.throws(() => new Client({ ...base, launcher: 'ssh host' }), /launcher must be a non-empty array of strings/);
    assert.throws(() => new Client({ ...base, launcher: [] }), /launcher must be/);
    assert.throws(() => new Client({ ...base, launcher: ['ssh'], launcherQuote: 'bash' }), /launcherQuote must be/);
    assert.throws(() => new Client({ ...base, launcher: ['ssh'], remote: 'yes' }), /remote must be true or false/);
    assert.throws(() => new Client({ ...base, install: '/build' }), /install needs a launcher/);
    assert.throws(() => new Client({ ...base, launcher: ['ssh'], install: '/b', executable: '/x' }), /not both/);
  });
});

describe('notifications and requests from the daemon', () => {
  const fake = join(HERE, 'fake-daemon.js');

  test('notifications reach the callback; server requests are refused; cancelWaitMs bounds an abort', async () => {
    assert.ok(existsSync(fake));
    const seen = [];
    const client = await Client.start({
      executable: fake,
      sampleOverCapGlobResults: true,
      cancelWaitMs: 300,
      onNotification: (method, params) => seen.push([method, params]),
    });
    try {
      await client.ping();
      const methods = seen.map(([method]) => method);
      assert.ok(methods.includes('notifications/message'));
      assert.ok(methods.includes('notifications/tools/list_changed'));
      assert.ok(methods.includes('$/progress'));
      assert.deepEqual(await client.request('test/answered'), { code: -32601 });

      // onProgress of a typed call sees the reports for its own token only; onNotification sees them all.
      for (const [method, call] of [
        ['glob', (onProgress) => client.glob('*', { onProgress })],
        ['terminal_search', (onProgress) => client.terminalSearch('t', 'x', { onProgress })],
      ]) {
        const reports = [];
        await call((report) => reports.push(report));
        assert.deepEqual(reports, [{ progress: 1, message: method }]);
      }
      const tokens = seen.filter(([method]) => method === 'notifications/progress').map(([, p]) => p.progressToken);
      assert.ok(tokens.includes('someone-else') && tokens.length >= 4, tokens);

      const started = Date.now();
      await assert.rejects(client.grep('x', { signal: AbortSignal.timeout(100) }), { name: 'AbortError', reply: null });
      assert.ok(Date.now() - started < 5000);
      assert.equal(client.pending, 0);
    } finally {
      assert.equal((await client.close()).code, 0);
    }
  });
});
