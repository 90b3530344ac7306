// A host written from clients/node/README.md alone, run by tests/hosts/test_readme_hosts.py from a copy
// outside the repository, with the client installed as the README says:
//
//   node host.mjs TREE CORPUS SLOW_PATTERN
//
// It greps TREE (capped, so it pages through the spill), then runs a slow grep in CORPUS and aborts it at
// the first progress report; it prints the daemon's answer to the cancellation, stops the daemon and exits.
import { Client, cancelReply } from 'dsh-search-client';

const [tree, corpus, slowPattern] = process.argv.slice(2);
const client = await Client.start({ sampleOverCapGlobResults: true, workdir: tree });
try {
  const found = await client.grep('^hit', { include: '*.txt', signal: AbortSignal.timeout(30_000) });
  console.log(`grep: ${found.text.split('\n')[0]}`);
  if (!found.spill) throw new Error('the grep was not capped');
  const pages = [];
  for await (const page of client.spillPages(found.spill, { limit: 100 })) pages.push(page);
  const lines = pages.reduce((sum, page) => sum + page.text.split('\n').length, 0);
  console.log(`spill: ${pages.length} pages, ${lines} of ${pages.at(-1).totalLines} lines`);

  const controller = new AbortController();
  try {
    await client.grep(slowPattern, {
      cwd: corpus,
      signal: controller.signal,
      onProgress: ({ message }) => {
        console.log(`progress: ${message}`);
        controller.abort(); // enough
      },
    });
    console.log('FAILED: the slow grep was not cancelled');
  } catch (err) {
    const reply = cancelReply(err);
    if (!reply) throw err;
    console.log(`cancelled: ${reply.rpcCode} ${reply.code} ${reply.text}`);
  }
} finally {
  const status = await client.close();
  console.log(`closed: ${status?.code}`);
}
console.log('done');
