#!/usr/bin/env node
// A stand-in daemon over LSP framing: it sends what a newer daemon may send (progress, log messages,
// tools/list_changed, a request to the client) around its answers, so the client's handling can be tested.
// A request whose params carry `_meta.progressToken` gets one progress report for another token, then one
// for its own ({progress: 1, message: <method>}), before its answer.
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';

const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
let answered = null;
connection.onRequest((method, params) => {
  const token = params?._meta?.progressToken;
  if (token !== undefined) {
    connection.sendNotification('notifications/progress', { progressToken: 'someone-else', progress: 1, message: 'not yours' });
    connection.sendNotification('notifications/progress', { progressToken: token, progress: 1, message: method });
  }
  connection.sendNotification('$/progress', { token: 'p1', value: { kind: 'report', message: method } });
  connection.sendNotification('notifications/tools/list_changed');
  if (method === 'initialize') {
    connection.sendNotification('notifications/message', { level: 'info', data: 'hello' });
    connection
      .sendRequest('roots/list')
      .then((value) => (answered = { value }), (error) => (answered = { code: error.code }));
    return { serverInfo: { name: 'fake', version: '0' }, ripgrep: { path: '', version: '' }, config: {} };
  }
  if (method === 'test/answered') return answered;
  if (method === 'grep') return new Promise(() => {}); // never answered, not even when cancelled
  if (method === 'shutdown') return null;
  return {};
});
connection.onNotification('exit', () => process.exit(0));
connection.onClose(() => process.exit(0));
connection.listen();
