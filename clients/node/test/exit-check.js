#!/usr/bin/env node
// Run by client.test.js as a host of its own: one cancelled call, or one failed start, then it prints
// "done …" and must exit by itself at once. The client's waits are set to a minute, so a timer of the
// client left running after the call (the wait for a cancellation's answer, the wait for a failed daemon's
// exit) would keep this process alive for that minute.
//
//   node exit-check.js abort EXE CORPUS PATTERN     a grep aborted by AbortSignal.timeout, then close()
//   node exit-check.js startup EXE                  Client.start with a daemon that exits at once
import { Client } from '../index.js';

const [mode, executable, corpus, pattern] = process.argv.slice(2);
const waits = { cancelWaitMs: 60_000, exitWaitMs: 60_000, shutdownWaitMs: 60_000, termWaitMs: 60_000 };
const options = { executable, sampleOverCapGlobResults: true, stderr: 'ignore', ...waits };
let outcome;
if (mode === 'abort') {
  const client = await Client.start({ ...options, workdir: corpus });
  try {
    await client.grep(pattern, { signal: AbortSignal.timeout(300) });
    outcome = 'not aborted';
  } catch (err) {
    outcome = `${err.name} ${err.reply?.rpcCode}`;
  }
  const status = await client.close();
  outcome += ` exit=${status?.code}`;
} else if (mode === 'startup') {
  try {
    await Client.start(options);
    outcome = 'started';
  } catch (err) {
    outcome = `${err.name} ${err.exitCode}`;
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
const timers = process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
console.log(`done ${outcome} (active timers: ${timers})`);
