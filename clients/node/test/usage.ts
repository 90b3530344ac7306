// Type-checked only (npm run typecheck): the README's usage compiles against index.d.ts.
import {
  AbortedError,
  Client,
  ClosedError,
  REQUEST_CANCELLED,
  ERROR_KINDS,
  InstallError,
  RequestError,
  cancelReply,
  findExecutable,
  installRemote,
  launchCommand,
  type GrepResult,
  type Progress,
  type SpillPage,
} from '../index.js';

export async function usage(): Promise<void> {
  const client = await Client.start({
    executable: findExecutable(),
    sampleOverCapGlobResults: true,
    workdir: '/path/to/project',
    onNotification: (method: string, params: unknown) => console.log(method, params),
    cancelOnClose: false,
  });
  try {
    const info = client.initializeResult;
    console.log(info?.serverInfo.version, info?.ripgrep.version, info?.config['timeoutMs']);
    const found: GrepResult = await client.grep('TODO', {
      include: '*.py',
      signal: AbortSignal.timeout(10_000),
      onProgress: (report: Progress) => console.log(report.progress.toFixed(1), report.message),
    });
    for (const file of found.meta.files) console.log(file.path, file.matches[0]?.lineNumber);
    if (found.spill) {
      for await (const page of client.spillPages(found.spill, { limit: 500 })) {
        const p: SpillPage = page;
        console.log(p.startLine, p.nextOffset ?? 'end');
      }
    }
    const listed = await client.glob('**/*.ts', { cwd: '/elsewhere', sessionId: 's1' });
    console.log(listed.meta.paths.length, listed.text);
    const appended = await client.scrollbackAppend('term-1', new Uint8Array([104, 105, 10]));
    const hits = await client.terminalSearch('term-1', 'error', { regex: true, limit: 10 });
    console.log(appended.totalLines, hits.matches.map((m) => m.offset));
    const closed: boolean = await client.scrollbackClose('term-1');
    const pong: Record<string, unknown> = await client.ping();
    console.log(closed, pong, ERROR_KINDS.SEARCH_FAILED === 1002);
  } catch (err) {
    if (err instanceof RequestError) console.log(err.code, err.rpcCode, err.text);
    else if (err instanceof AbortedError) console.log(err.reply?.rpcCode === REQUEST_CANCELLED, err.cause);
    else if (cancelReply(err)) console.log(cancelReply(err)?.text);
    else if (err instanceof ClosedError) console.log(err.exitCode, err.stderr);
    else throw err;
  } finally {
    const status = await client.close({ cancel: true });
    console.log(status?.code, status?.signal);
  }
}

// The README's remote use: a launcher, the build installed through it.
export async function remote(): Promise<void> {
  const launcher = ['ssh', '-T', '-o', 'BatchMode=yes', 'dev@build-box'];
  try {
    const path: string = await installRemote({ launcher, build: '/path/to/dist', signal: AbortSignal.timeout(60_000) });
    console.log(path, launchCommand(launcher, 'auto', path, ['--version']));
  } catch (err) {
    if (err instanceof InstallError) console.log(err.message, err.exitCode, err.stderr);
    else throw err;
  }
  const client = await Client.start({
    launcher: ['docker', 'exec', '-i', 'devcontainer'],
    launcherQuote: 'none',
    remote: true,
    install: '/path/to/dist',
    sampleOverCapGlobResults: true,
    workdir: '/workspaces/repo',
  });
  await client.close();
}
