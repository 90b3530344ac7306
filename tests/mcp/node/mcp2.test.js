// The official MCP TypeScript client 2.x (@modelcontextprotocol/client) drives the frozen dsh-search over
// stdio with `versionNegotiation: { mode: 'auto' }`, as the OpenAI Agents SDK for JavaScript configures it:
// it probes server/discover in a throwaway copy of the server, reaps it (stdin closed, SIGTERM), then
// starts the copy the session uses, which never sees server/discover. Run by
// tests/mcp/test_typescript_sdk.py, which sets DSH_SEARCH_EXE, DSH_SLOW_CORPUS and DSH_SLOW_PATTERN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';
import { EXE, SLOW_CORPUS, SLOW_PATTERN, SLOW_TIMEOUT_MS, alive, rgRunning, skip, textOf, until, scratch as scratchIn } from './support.js';

const scratch = (files) => scratchIn(files, 'dsh-mcp-ts2-');

const MODERN = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};

function baseArgs(args, spill) {
  return ['--sample-over-cap-glob-results', 'true', '--spill-dir', spill ?? scratch({}), '--mcp-result', 'full', ...args];
}

// The daemon started through a shell that first appends its pid to `spawns`: each copy the client starts
// is a line of that file.
function transportFor(args, { spill, spawns } = {}) {
  const argv = baseArgs(args, spill);
  if (!spawns) return new StdioClientTransport({ command: EXE, args: argv, cwd: '/', stderr: 'inherit' });
  const script = 'echo $$ >> "$0"; exec "$@"';
  return new StdioClientTransport({ command: '/bin/sh', args: ['-c', script, spawns, EXE, ...argv], cwd: '/', stderr: 'inherit' });
}

async function connect(args, options = {}) {
  const client = new Client(
    { name: 'dsh-search-tests', version: '0.0.0' },
    { versionNegotiation: { mode: 'auto' }, ...(options.listChanged ? { listChanged: options.listChanged } : {}) },
  );
  await client.connect(transportFor(args, options));
  assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
  await client.listTools(); // caches each tool's outputSchema validator
  return client;
}

test('auto mode settles on 2026-07-28: a probe copy, gone at once, and the session copy', { skip }, async () => {
  const project = scratch({ 'a.md': 'alpha\n' });
  const spawns = path.join(scratch({}), 'spawns.txt');
  for (let round = 1; round <= 2; round += 1) {
    const client = await connect(['--workdir', project], { spawns });
    try {
      const pids = fs.readFileSync(spawns, 'utf8').trim().split('\n');
      assert.equal(pids.length, 2 * round, 'one probe copy and one session copy per connection');
      assert.equal(alive(pids.at(-2)), false, 'the probe copy outlived the connect');
      assert.equal(alive(pids.at(-1)), true);
      assert.equal(client.getServerVersion().name, 'dsh-search');
      assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: true }, resources: {} });
      assert.equal(textOf(await client.callTool({ name: 'glob', arguments: { pattern: '*.md' } })), 'a.md');
    } finally {
      await client.close();
    }
  }
});

test('tools are listed, called and validated by the SDK; failures are their text only', { skip }, async () => {
  const files = {};
  for (let i = 0; i < 5; i += 1) files[`d${i}/f${i}.md`] = `line ${i}\n`;
  const project = scratch(files);
  const args = ['--workdir', project, '--glob-max-results', '2', '--grep-max-matches', '2', '--read-tool', 'true'];
  for (const mode of ['auto', 'full']) { // the default shape (SPEC §3), and the native one
    const client = await connect([...args, '--terminal-search', 'always', '--mcp-result', mode]);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['glob', 'grep', 'terminal_search', 'read']);
      for (const tool of tools) assert.equal(tool.outputSchema.additionalProperties, false);
      const calls = [
        ['glob', { pattern: '*.md' }, false],
        ['glob', { pattern: 'nothing' }, false],
        ['grep', { pattern: 'line' }, false],
        ['terminal_search', { sessionId: 'nope', pattern: 'x' }, true],
        ['read', { path: 'd2/f2.md' }, false],
        ['grep', { pattern: '(unclosed' }, true],
        ['glob', { pattern: '' }, true],
      ];
      for (const [name, args, isError] of calls) {
        const result = await client.callTool({ name, arguments: args }); // throws if the SDK's validation fails
        assert.equal(result.isError, isError, `${name} ${JSON.stringify(args)}: ${textOf(result)}`);
        if (isError) {
          assert.equal(result.structuredContent, undefined);
          assert.equal(result._meta['dsh-search/error'].text, textOf(result));
        } else {
          assert.equal(result.structuredContent.text, textOf(result));
        }
      }
      assert.equal(textOf(await client.callTool({ name: 'read', arguments: { path: 'd2/f2.md' } })), '     1\tline 2');
    } finally {
      await client.close();
    }
  }
});

test('a capped result is read through its resource link and through the read tool', { skip }, async () => {
  const files = {};
  for (let i = 0; i < 7; i += 1) files[`f${i}.md`] = 'n\n';
  const project = scratch(files);
  const spill = scratch({});
  const client = await connect(
    ['--workdir', project, '--allowed-root', project, '--glob-max-results', '2', '--read-tool', 'true'],
    { spill },
  );
  try {
    const capped = await client.callTool({ name: 'glob', arguments: { pattern: '*.md' } });
    const [pointer, link] = capped.content;
    const locator = capped.structuredContent.spill.locator;
    assert.ok(locator.startsWith(spill), locator);
    assert.match(pointer.text, new RegExp(`Full sorted result stored at: ${locator}\\.`));
    assert.equal(link.type, 'resource_link');
    const whole = await client.readResource({ uri: link.uri });
    assert.equal(whole.contents[0].text, [0, 1, 2, 3, 4, 5, 6].map((i) => `f${i}.md`).join('\n'));
    const page = await client.readResource({ uri: `${link.uri}?offset=6&limit=5` });
    assert.equal(page.contents[0].text, 'f5.md\nf6.md');
    assert.equal(page.contents[0]._meta['dsh-search/lines'].nextOffset, null);
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['dsh-search://spill/{session}/{artifact}{?offset,limit}']);
    await assert.rejects(client.readResource({ uri: 'file:///etc/passwd' }), /Invalid resource URI/);
    await assert.rejects(client.readResource({ uri: link.uri.replace(/[^/]+$/, '0123456789ab-gone.txt') }), /Resource not found/);
    const read = await client.callTool({ name: 'read', arguments: { path: link.uri, offset: 7 } });
    assert.equal(textOf(read), '     7\tf6.md');
    const byPath = await client.callTool({ name: 'read', arguments: { path: locator, limit: 1 } });
    assert.equal(textOf(byPath), '     1\tf0.md\n\n(Showing lines 1-1 of 7. Use offset 2 to read more.)');
  } finally {
    await client.close();
  }
});

test('progress notifications during a slow search', { skip }, async () => {
  const client = await connect(['--workdir', SLOW_CORPUS, '--timeout-ms', SLOW_TIMEOUT_MS]);
  try {
    const seen = [];
    const result = await client.callTool({ name: 'grep', arguments: { pattern: SLOW_PATTERN } }, {
      onprogress: (progress) => seen.push(progress),
      timeout: 120_000,
    });
    assert.equal(textOf(result), 'No matches found');
    assert.ok(seen.length >= 1, 'no notifications/progress');
    for (let i = 1; i < seen.length; i += 1) assert.ok(seen[i].progress > seen[i - 1].progress, JSON.stringify(seen));
    for (const p of seen) assert.match(p.message, /^grep: \d+ matches in \d+ files so far( \(walking the tree: .+\))?$|^grep: waiting/);
  } finally {
    await client.close();
  }
});

test('cancellation: an aborted call stops ripgrep and the session goes on', { skip }, async () => {
  const client = await connect(['--workdir', SLOW_CORPUS, '--timeout-ms', SLOW_TIMEOUT_MS]);
  try {
    const controller = new AbortController();
    const call = client.callTool({ name: 'grep', arguments: { pattern: SLOW_PATTERN } }, {
      signal: controller.signal,
      timeout: 120_000,
    });
    const settled = call.then(
      () => 'answered',
      (err) => err,
    );
    await until(() => rgRunning() > 0, 20_000, 'ripgrep to start');
    controller.abort('the user changed their mind'); // the SDK sends notifications/cancelled
    assert.notEqual(await settled, 'answered');
    await until(() => rgRunning() === 0, 10_000, 'ripgrep to stop');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['glob', 'grep']);
  } finally {
    await client.close();
  }
});

test('terminal_search arrives on the subscriptions/listen stream the SDK opens', { skip }, async () => {
  const changed = [];
  const client = await connect(['--workdir', os.tmpdir()], {
    listChanged: { tools: { debounceMs: 0, onChanged: (error, tools) => changed.push(error ?? tools.map((t) => t.name)) } },
  });
  try {
    assert.ok(client.autoOpenedSubscription, 'connect() opened subscriptions/listen and had it acknowledged');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['glob', 'grep']);
    const appended = await client.request(
      { method: 'scrollback/append', params: { sessionId: 'term-1', data: 'make\nerror: missing semicolon\n' } },
      z.object({ totalLines: z.number(), truncated: z.boolean() }).passthrough(),
    );
    assert.equal(appended.totalLines, 3);
    await until(() => changed.length > 0, 10_000, 'notifications/tools/list_changed on the stream');
    assert.deepEqual(changed.at(-1), ['glob', 'grep', 'terminal_search']);
    const found = await client.callTool({ name: 'terminal_search', arguments: { sessionId: 'term-1', pattern: 'error' } });
    assert.equal(textOf(found), '[offset 1] error: missing semicolon\n[search: 1 of 1 matches, 3 retained lines]');
  } finally {
    await client.close();
  }
});

// One cold start: the daemon spawned, asked server/discover, answering it (the first message a copy that is
// only probed gets), then told to go. What the SDK's connect() does on top of it is what is measured against it.
function coldStart(args) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(EXE, baseArgs(args), { cwd: '/', stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    let answered;
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (answered === undefined && out.includes('\n')) {
        answered = performance.now() - started;
        assert.equal(JSON.parse(out.split('\n')[0]).result.resultType, 'complete');
        child.stdin.end();
        child.kill('SIGTERM');
      }
    });
    child.on('error', reject);
    child.on('exit', () => (answered === undefined ? reject(new Error('no answer')) : resolve(answered)));
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: ENVELOPE } })}\n`);
  });
}

async function timedConnect(args) {
  const client = new Client({ name: 'dsh-search-tests', version: '0.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const transport = new StdioClientTransport({ command: EXE, args: baseArgs(args), cwd: '/', stderr: 'inherit' });
  const started = performance.now();
  await client.connect(transport);
  const took = performance.now() - started;
  assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
  await client.close();
  return took;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

test('connect() costs at most 2.5 cold starts (measured interleaved, as a ratio of medians)', { skip }, async () => {
  const project = scratch({ 'a.md': 'alpha\n' });
  const args = ['--workdir', project];
  const cold = [];
  const connects = [];
  await coldStart(args); // the executable's pages in the cache, for both alike
  for (let round = 0; round < 9; round += 1) {
    cold.push(await coldStart(args));
    connects.push(await timedConnect(args));
  }
  const ratio = median(connects) / median(cold);
  console.log(
    `# connect ${median(connects).toFixed(0)} ms, cold start ${median(cold).toFixed(0)} ms, ratio ${ratio.toFixed(2)}`,
  );
  assert.ok(ratio <= 2.5, `connect ${JSON.stringify(connects)} vs cold start ${JSON.stringify(cold)}`);
});
