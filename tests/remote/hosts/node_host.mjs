// A host on the Node client that drives a daemon on the far side of a launcher (tests/remote): the same
// steps and lines as python_host.py.
//
//   node node_host.mjs '{"mode": "session"|"hang", "launcher": [...], "workdir": "/tmp/ws", "slow": "/tmp/slow",
//                        "install": "/path/to/dist" (optional)}'
import { Client, RequestError, cancelReply, installRemote } from '../../../clients/node/index.js';

const SLOW_PATTERN = String.raw`(?:\w+\W){1,20}?\w{9}\b`;
const say = (line) => process.stdout.write(`${line}\n`);

async function session(config) {
  const { launcher } = config;
  let executable;
  if (config.install) {
    executable = await installRemote({ launcher, build: config.install });
    say(`install: ${executable}`);
  }
  const client = await Client.start({
    executable,
    launcher,
    sampleOverCapGlobResults: true,
    workdir: config.workdir,
    args: ['--index', 'off', '--timeout-ms', '120000'],
    stderr: 'capture',
  });
  try {
    const info = client.initializeResult;
    say(`initialize: ${info.serverInfo.name} remote=${JSON.stringify(info.config.remote)} ripgrep=${info.ripgrep.path}`);
    const found = await client.grep('TODO');
    say(`grep: ${found.text.split('\n')[0]} in ${found.meta.files.map((f) => f.path).join(', ')}`);
    const listed = await client.glob('**/*.js');
    say(`glob: ${listed.meta.paths.join(', ')}`);
    const capped = await client.glob('many/*.txt');
    say(`capped: ${capped.meta.paths.length} of ${capped.meta.total}, saved at ${capped.spill.locator}`);
    say(`footer: ${capped.text.split('\n').at(-1)}`);
    const lines = [];
    for await (const page of client.spillPages(capped.spill, { limit: 40 })) lines.push(...page.text.split('\n'));
    say(`spill pages: ${lines.length} lines, ${lines[0]} .. ${lines.at(-1)}`);
    const read = await client.callTool('read', { path: capped.spill.locator, offset: 150, limit: 1 });
    say(`read: ${read.content[0].text.split('\n')[0]}`);
    const reports = [];
    try {
      await client.grep(SLOW_PATTERN, {
        cwd: config.slow,
        signal: AbortSignal.timeout(1500),
        onProgress: (report) => reports.push(report),
      });
      say('cancel: the slow grep finished');
    } catch (err) {
      const reply = cancelReply(err);
      if (!reply) throw err;
      say(`cancel: ${reply.rpcCode} ${reply.code} ${reply.text}`);
    }
    say(`progress: ${reports.length} reports, ${reports[0]?.message ?? ''}`);
    try {
      await client.grep('(');
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      say(`error: ${err.rpcCode} ${err.code} ${err.text.split('\n')[0]}`);
    }
    try {
      await client.grep('x', { cwd: '/nonexistent/on-the-far-side' });
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      say(`missing cwd: ${err.code} ${err.text}`);
    }
  } finally {
    const status = await client.close();
    say(`close: status ${status.code}`);
  }
}

async function hang(config) {
  const client = await Client.start({
    launcher: config.launcher,
    install: config.install,
    sampleOverCapGlobResults: true,
    workdir: config.workdir,
    args: ['--index', 'off', '--timeout-ms', '120000'],
  });
  say('slow grep: started');
  await client.grep(SLOW_PATTERN, { cwd: config.slow });
  say('slow grep: ended');
  await client.close();
}

const config = JSON.parse(process.argv[2]);
await (config.mode === 'session' ? session(config) : hang(config));
say('done');
