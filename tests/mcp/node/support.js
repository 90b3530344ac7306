// What both clients' tests share: the environment the Python runner passes, scratch trees, and waiting
// on the processes a daemon runs. Nothing here knows an SDK.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const EXE = process.env.DSH_SEARCH_EXE;
export const SLOW_CORPUS = process.env.DSH_SLOW_CORPUS;
export const SLOW_PATTERN = process.env.DSH_SLOW_PATTERN;
export const skip = !EXE || !SLOW_CORPUS || !SLOW_PATTERN;
// The slow searches take seconds, more on a busy machine: the daemon's own timeout must not end them.
export const SLOW_TIMEOUT_MS = '120000';

// A fresh directory holding `files` (name → text), each with its own mtime: glob lists oldest first.
export function scratch(files, prefix = 'dsh-mcp-ts-') {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let when = Date.now() / 1000 - 1000;
  for (const [name, body] of Object.entries(files)) {
    const file = path.join(root, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, body);
    fs.utimesSync(file, when, when);
    when += 10;
  }
  return root;
}

export const textOf = (result) => result.content[0].text;

// Whether a process lives (a zombie does not count).
export function alive(pid) {
  try {
    const state = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[0];
    return state !== 'Z';
  } catch {
    return false;
  }
}

// How many of the daemon's ripgrep sidecars run now.
export function rgRunning() {
  const sidecar = `${EXE}-rg`;
  return fs.readdirSync('/proc').filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === sidecar;
    } catch {
      return false;
    }
  }).length;
}

export async function until(predicate, ms, what) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
