// The official MCP TypeScript SDK client 1.x (@modelcontextprotocol/sdk) drives the frozen dsh-search over
// stdio, as an editor or desktop client would: the 2025-11-25 initialize handshake, the legacy era. Run by
// tests/mcp/test_typescript_sdk.py, which sets DSH_SEARCH_EXE, DSH_SLOW_CORPUS and DSH_SLOW_PATTERN. The
// SDK validates every structuredContent against the tool's outputSchema itself (after listTools).
import { realpathSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { EXE, SLOW_CORPUS, SLOW_PATTERN, SLOW_TIMEOUT_MS, rgRunning, skip, textOf, until, scratch as scratchIn } from './support.js';

const scratch = (files) => scratchIn(files, 'dsh-mcp-ts-');


async function connect(args, { roots, cwd = '/', onLog, spill } = {}) {
  const transport = new StdioClientTransport({
    command: EXE,
    args: ['--sample-over-cap-glob-results', 'true', '--spill-dir', spill ?? scratch({}), '--mcp-result', 'full', ...args],
    cwd,
    stderr: 'inherit',
  });
  const client = new Client(
    { name: 'dsh-search-tests', version: '0.0.0' },
    { capabilities: roots ? { roots: { listChanged: true } } : {} },
  );
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      roots.asked += 1;
      return { roots: roots.current.map((dir) => ({ uri: pathToFileURL(dir).href, name: path.basename(dir) })) };
    });
  }
  if (onLog) client.setNotificationHandler(LoggingMessageNotificationSchema, (note) => onLog(note.params));
  await client.connect(transport);
  await client.listTools(); // caches each tool's outputSchema validator
  return client;
}

test('roots from the client are the workspace, and follow roots/list_changed', { skip }, async () => {
  const one = scratch({ 'README.md': 'alpha\n', 'docs/guide.md': 'alpha beta\n' });
  const two = scratch({ 'notes.md': 'beta\n' });
  const roots = { current: [one], asked: 0 };
  const client = await connect([], { roots }); // cwd / and no --workdir, as desktop clients start servers
  try {
    assert.equal(textOf(await client.callTool({ name: 'glob', arguments: { pattern: '*.md' } })), 'README.md\ndocs/guide.md');
    const outside = await client.callTool({ name: 'grep', arguments: { pattern: 'beta', path: two } });
    assert.equal(outside.isError, true);
    assert.equal(textOf(outside), `Error: path is outside the allowed roots; this session's roots are ${realpathSync(one)}`);
    roots.current = [two, one];
    await client.sendRootsListChanged();
    assert.equal(textOf(await client.callTool({ name: 'glob', arguments: { pattern: '*.md' } })), 'notes.md');
    const inside = await client.callTool({ name: 'grep', arguments: { pattern: 'alpha', path: one } });
    assert.equal(inside.isError, false);
    assert.match(textOf(inside), /^Found 2 matches\n\n/);
    assert.equal(roots.asked, 2);
  } finally {
    await client.close();
  }
});

test('progress notifications during a slow search', { skip }, async () => {
  const client = await connect(['--workdir', SLOW_CORPUS, '--timeout-ms', SLOW_TIMEOUT_MS]);
  try {
    const seen = [];
    const result = await client.callTool({ name: 'grep', arguments: { pattern: SLOW_PATTERN } }, undefined, {
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
    const call = client.callTool({ name: 'grep', arguments: { pattern: SLOW_PATTERN } }, undefined, {
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
    assert.deepEqual(await client.ping(), {});
  } finally {
    await client.close();
  }
});

// Both the default shape (SPEC §3: the text and its counts, mcpResult auto) and the native one (full).
test('structuredContent conforms to outputSchema; failures are their text only', { skip }, async () => {
  const files = {};
  for (let i = 0; i < 5; i += 1) files[`d${i}/f${i}.md`] = `line ${i}\n`;
  const project = scratch(files);
  for (const mode of ['auto', 'full']) {
    const client = await connect(['--workdir', project, '--glob-max-results', '2', '--grep-max-matches', '2', '--mcp-result', mode]);
    try {
      assert.equal(client.getServerVersion().name, 'dsh-search');
      assert.deepEqual(client.getServerCapabilities(), { tools: { listChanged: true }, logging: {}, resources: {} });
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['glob', 'grep']);
      for (const tool of tools) {
        assert.deepEqual(Object.keys(tool).sort(), ['annotations', 'description', 'inputSchema', 'name', 'outputSchema']);
        assert.ok(tool.outputSchema.required.includes('text'));
        assert.equal(tool.outputSchema.required.includes('meta'), mode === 'full', mode);
      }
      const calls = [
        ['glob', { pattern: '*.md' }, false],
        ['glob', { pattern: 'nothing' }, false],
        ['grep', { pattern: 'line' }, false],
        ['grep', { pattern: '(unclosed' }, true],
        ['glob', { pattern: '' }, true],
      ];
      for (const [name, args, isError] of calls) {
        const result = await client.callTool({ name, arguments: args }); // throws if the SDK's validation fails
        assert.equal(result.isError, isError, `${name} ${JSON.stringify(args)}: ${textOf(result)}`);
        if (isError) assert.equal(result.structuredContent, undefined); // the text alone: one level
        else assert.equal(result.structuredContent.text, textOf(result));
      }
      const bad = await client.callTool({ name: 'grep', arguments: { pattern: '(unclosed' } });
      assert.equal(bad._meta['dsh-search/error'].code, 'SEARCH_INVALID_PATTERN');
      assert.match(textOf(bad), /^Error: grep pattern rejected by ripgrep: /);
    } finally {
      await client.close();
    }
  }
});

test('a capped result is read through its link, the read tool and grep, under --allowed-root', { skip }, async () => {
  const project = scratch({ 'f0.md': 'n\n', 'f1.md': 'n\n', 'f2.md': 'n\n', 'f3.md': 'n\n' });
  const spill = scratch({});
  const args = ['--workdir', project, '--allowed-root', project, '--glob-max-results', '2', '--read-tool', 'true'];
  const client = await connect(args, { spill });
  try {
    const capped = await client.callTool({ name: 'glob', arguments: { pattern: '*.md' } });
    const locator = capped.structuredContent.spill.locator;
    assert.ok(locator.startsWith(spill), locator);
    const link = capped.content[1];
    assert.equal(link.type, 'resource_link');
    const whole = await client.readResource({ uri: link.uri });
    assert.equal(whole.contents[0].text, 'f0.md\nf1.md\nf2.md\nf3.md');
    const page = await client.readResource({ uri: `${link.uri}?offset=2&limit=1` });
    assert.equal(page.contents[0].text, 'f1.md');
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, 'dsh-search://spill/{session}/{artifact}{?offset,limit}');
    await assert.rejects(client.readResource({ uri: link.uri.replace(/[^/]+$/, '0123456789ab-gone.txt') }), /-32002/);
    const read = await client.callTool({ name: 'read', arguments: { path: locator, offset: 4 } });
    assert.equal(textOf(read), '     4\tf3.md');
    const found = await client.callTool({ name: 'grep', arguments: { pattern: 'f3', path: locator } });
    assert.equal(found.isError, false, textOf(found));
    assert.equal(textOf(found), `Found 1 match\n\n${locator}\nLine 4: f3.md`);
  } finally {
    await client.close();
  }
});

test('terminal_search is listed once a scrollback exists, announced with list_changed', { skip }, async () => {
  const client = await connect(['--workdir', os.tmpdir()]);
  try {
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed += 1;
    });
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['glob', 'grep']);
    const appended = await client.request(
      { method: 'scrollback/append', params: { sessionId: 'term-1', data: 'make\nerror: missing semicolon\n' } },
      z.object({ totalLines: z.number(), truncated: z.boolean() }),
    );
    assert.equal(appended.totalLines, 3);
    await until(() => changed === 1, 5_000, 'notifications/tools/list_changed');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['glob', 'grep', 'terminal_search']);
    const found = await client.callTool({ name: 'terminal_search', arguments: { sessionId: 'term-1', pattern: 'error' } });
    assert.equal(textOf(found), '[offset 1] error: missing semicolon\n[search: 1 of 1 matches, 3 retained lines]');
    assert.deepEqual(found.structuredContent.matches, [{ offset: 1, line: 'error: missing semicolon' }]);
    const unknown = await client.callTool({ name: 'terminal_search', arguments: { sessionId: 'nope', pattern: 'x' } });
    assert.equal(unknown.isError, true);
    assert.equal(textOf(unknown), 'Error: unknown terminal session: nope');
  } finally {
    await client.close();
  }
});

test('warnings reach the client as notifications/message', { skip }, async () => {
  const project = scratch({ 'a.md': '', 'b.md': '' });
  const notADirectory = path.join(scratch({ spill: 'a file' }), 'spill');
  const logs = [];
  const client = await connect(['--workdir', project, '--glob-max-results', '1'], {
    spill: notADirectory,
    onLog: (params) => logs.push(params),
  });
  try {
    await client.setLoggingLevel('warning');
    const result = await client.callTool({ name: 'glob', arguments: { pattern: '*.md' } });
    assert.match(textOf(result), /The complete result could not be saved/);
    assert.ok(
      logs.some((l) => l.level === 'warning' && String(l.data).includes('could not save glob-results.txt')),
      JSON.stringify(logs),
    );
  } finally {
    await client.close();
  }
});
