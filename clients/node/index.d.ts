// Types of dsh-search-client (index.js). The result shapes are the daemon's JSON, unchanged.

/** JSON-RPC error code of a request cancelled with `$/cancelRequest`. */
export declare const REQUEST_CANCELLED: -32800;

/**
 * The failure kinds of tool methods (`data.code`) and their JSON-RPC codes, as the daemon's `rpc.discover`
 * publishes them (SEARCH_ABORTED is -32800 instead for a request cancelled with `$/cancelRequest`).
 */
export declare const ERROR_KINDS: Readonly<{
  INVALID_ARGS: -32602;
  SEARCH_INVALID_PATTERN: 1001;
  SEARCH_FAILED: 1002;
  SEARCH_RAW_OUTPUT_OVERFLOW: 1003;
  SEARCH_ABORTED: 1004;
}>;

/** The failure kinds of tool methods (`data.code`), and names for envelope errors without data. */
export type ErrorCode =
  | 'INVALID_ARGS'
  | 'SEARCH_INVALID_PATTERN'
  | 'SEARCH_FAILED'
  | 'SEARCH_RAW_OUTPUT_OVERFLOW'
  | 'SEARCH_ABORTED'
  | 'PARSE_ERROR'
  | 'INVALID_REQUEST'
  | 'METHOD_NOT_FOUND'
  | 'INVALID_PARAMS'
  | 'INTERNAL_ERROR'
  | 'REQUEST_CANCELLED'
  | (string & {});

/** Base class of every error this client throws. */
export declare class DshSearchError extends Error {}

/** The daemon answered with a JSON-RPC error. */
export declare class RequestError extends DshSearchError {
  readonly name: 'RequestError';
  /** The method that failed. */
  readonly method: string;
  /** The failure kind: `data.code` (e.g. SEARCH_FAILED), or a name for an envelope error (METHOD_NOT_FOUND). */
  readonly code: ErrorCode;
  /** The numeric JSON-RPC code (1001–1004, -32602, -32800, …). */
  readonly rpcCode: number;
  /** `data.text`: exactly what a model should be shown ("Error: …"); else the error message. */
  readonly text: string;
  /** The JSON-RPC error message. */
  readonly rpcMessage: string;
  /** The error's `data`, as sent (`{code, text}` for tool methods), or null. */
  readonly data: unknown;
}

/** A call whose AbortSignal fired. */
export declare class AbortedError extends DshSearchError {
  readonly name: 'AbortError';
  readonly method: string;
  /** The signal's reason. */
  readonly cause: unknown;
  /** The daemon's answer to the cancellation (rpcCode -32800), or null if none came within cancelWaitMs. */
  readonly reply: RequestError | null;
}

/**
 * The daemon's answer to a cancelled call (rpcCode -32800, code SEARCH_ABORTED, `text` for the model), from
 * what the call rejected with: an AbortedError's `reply`, a RequestError that is that answer, or either as the
 * `cause` of a wrapping error. null if there is none.
 */
export declare function cancelReply(err: unknown): RequestError | null;

/** The daemon's stdout ended (it exited) before the answer came, or the client was closed. */
export declare class ClosedError extends DshSearchError {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The daemon's last stderr lines, with `stderr: 'capture'`. */
  readonly stderr: string;
}

/** The daemon exited before answering initialize (exit 3: ripgrep sidecar missing; 2: invalid configuration). */
export declare class StartupError extends ClosedError {}

/**
 * `explicit`, else $DSH_SEARCH_EXE, else `dsh-search`, as an absolute path; a bare name is looked up on PATH
 * (its absolute directories), never in the current directory. Throws if there is none.
 */
export declare function findExecutable(explicit?: string | null, env?: NodeJS.ProcessEnv): string;

/**
 * How the daemon's argv goes through a launcher: 'shell' quotes each argument for a POSIX shell and joins
 * them into one (what ssh needs), 'none' passes them as they are (docker/podman/kubectl exec, wsl.exe
 * --exec), 'auto' is 'shell' when the launcher's program is ssh.
 */
export type LauncherQuote = 'auto' | 'shell' | 'none';

/** Whether `launchCommand` quotes the daemon's argv for a shell behind this launcher. */
export declare function quotesForShell(launcher: readonly string[], quote?: LauncherQuote): boolean;
/** `arg` as one word of a POSIX shell (single-quoted). */
export declare function shellWord(arg: string): string;
/** The argv to spawn: `program` and `args`, after the launcher if there is one. */
export declare function launchCommand(
  launcher: readonly string[] | null | undefined,
  quote: LauncherQuote,
  program: string,
  args: readonly string[],
): string[];

/** The build could not be put on (or found on) the far side. */
export declare class InstallError extends DshSearchError {
  readonly name: 'InstallError';
  /** The launcher's exit status (255: ssh could not connect), or null. */
  readonly exitCode: number | null;
  /** The launcher's last stderr lines. */
  readonly stderr: string;
}

export interface InstallOptions {
  /** The launcher, as in ClientOptions. */
  launcher: readonly string[];
  /** A directory holding dsh-search and dsh-search-rg built for the far side's platform (or that dsh-search). */
  build: string;
  launcherQuote?: LauncherQuote;
  /** The launcher's environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Aborting stops the launcher; the far side drops what it got. */
  signal?: AbortSignal;
}

/**
 * Make sure the far side of the launcher has this build (its per-user cache, checked by sha256, reused when
 * present; else sent through the channel) and resolve with the path of its dsh-search there.
 */
export declare function installRemote(options: InstallOptions): Promise<string>;

export interface ClientOptions {
  /**
   * The daemon executable; default `findExecutable()` ($DSH_SEARCH_EXE, then PATH). With a launcher, its path
   * (or a name on the PATH) on the far side, default `dsh-search`, not looked up here.
   */
  executable?: string | null;
  /**
   * A command prefix, as an argv array (never a shell string), that starts the daemon on the far side of a
   * channel: `['ssh', '-T', '-o', 'BatchMode=yes', 'user@host']`, `['docker', 'exec', '-i', 'ctr']`,
   * `['kubectl', 'exec', '-i', 'pod', '--']`, `['podman', 'exec', '-i', 'ctr']`, `['wsl.exe', '--exec']`.
   */
  launcher?: readonly string[] | null;
  /** How the daemon's argv goes through the launcher (default 'auto'). */
  launcherQuote?: LauncherQuote;
  /** Pass `--remote true` (the daemon's paths are not the host's); default: when there is a launcher. */
  remote?: boolean;
  /**
   * With a launcher: first put this build (a directory holding dsh-search and dsh-search-rg for the far
   * side's platform) on the far side through it, and run that (`installRemote`).
   */
  install?: string;
  /**
   * Required by the daemon: how an over-cap glob is ordered (sampled across top-level entries, or oldest
   * first). `null` only if `args` or a `--config` file sets it.
   */
  sampleOverCapGlobResults: boolean | null;
  /** `--workdir`: the default `cwd` of searches. */
  workdir?: string;
  /** `--spill-dir`: where complete results of capped searches are saved. */
  spillDir?: string;
  /** Further flags (`--timeout-ms`, `--config FILE`, …). */
  args?: readonly string[];
  /** The daemon's whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** 'inherit' (default): the daemon's logs go to our stderr; 'ignore'; 'capture': keep the last lines. */
  stderr?: 'inherit' | 'ignore' | 'capture';
  /** Called for every notification the daemon sends (progress, log messages, tools/list_changed, …). */
  onNotification?: (method: string, params: unknown) => void | Promise<void>;
  /** Send `initialize` at start (default true); the answer is `initializeResult`. */
  initialize?: boolean;
  clientInfo?: { name: string; version: string };
  /** How long an aborted call waits for the daemon's -32800 answer (default 5000). */
  cancelWaitMs?: number;
  /** close(): how long `shutdown` may wait for running searches (default 10000). */
  shutdownWaitMs?: number;
  /** close(): how long to wait for the exit after stdin is closed, before SIGTERM (default 5000). */
  exitWaitMs?: number;
  /** close(): how long to wait after SIGTERM, before SIGKILL (default 6000; the daemon needs graceMs + 1 s). */
  termWaitMs?: number;
  /** close(): cancel the calls still running instead of letting `shutdown` wait for them (default false). */
  cancelOnClose?: boolean;
}

export interface CallOptions {
  /** Aborting sends `$/cancelRequest`; the call rejects with AbortedError once the daemon confirmed. */
  signal?: AbortSignal;
}

/** A progress report of a running search (MCP's notifications/progress). */
export interface Progress {
  /** Seconds since the call started (grows with every report). */
  progress: number;
  /** What ripgrep found so far, e.g. "grep: 31 matches in 7 files so far". */
  message: string;
}

export interface ProgressOptions {
  /**
   * Called with the daemon's progress reports while the call runs: the first half a second after it started
   * (a faster call gets none), then at most two a second, never after the answer.
   */
  onProgress?: (report: Progress) => void | Promise<void>;
}

export interface SearchOptions extends CallOptions, ProgressOptions {
  /** The directory to search (relative to `cwd`); default `cwd`. */
  path?: string;
  /** The calling session's working directory; default the daemon's `--workdir`. */
  cwd?: string;
  /** Groups spill artifacts; default "default". */
  sessionId?: string;
}

export interface GrepOptions extends SearchOptions {
  /** A ripgrep --glob filter on file names, e.g. "*.py". */
  include?: string;
}

export interface Spill {
  /** The artifact's absolute path: pass it (or this object) to spillRead/spillPages. */
  locator: string;
  bytes: number;
  retrievalHint: string;
}

export interface GlobMeta {
  shape: 'paths';
  paths: string[];
  truncated: boolean;
  total: number;
}

export interface GrepMeta {
  shape: 'matches';
  files: { path: string; matches: { lineNumber: number; line: string }[] }[];
  truncated: boolean;
  total: number;
}

export interface SearchResult<Meta> {
  /** What the model sees. */
  text: string;
  /** The page shown inline, for a UI. */
  meta: Meta;
  /** Set when the inline page was capped and the complete result saved. */
  spill: Spill | null;
}

export type GlobResult = SearchResult<GlobMeta>;
export type GrepResult = SearchResult<GrepMeta>;

export interface TerminalSearchOptions extends CallOptions, ProgressOptions {
  /** ripgrep regex syntax instead of a literal substring. */
  regex?: boolean;
  /** Skip this many matches (paging). */
  offset?: number;
  /** At most this many matches (default 100). */
  limit?: number;
}

export interface TerminalSearchResult {
  text: string;
  /** Newest first; `offset` is newest-relative (scrollbackRead with it ends at the match line). */
  matches: { offset: number; line: string }[];
  matchCount: number;
  totalLines: number;
  truncated: boolean;
}

export interface AppendResult {
  totalLines: number;
  truncated: boolean;
}

export interface ScrollbackPage {
  text: string;
  lineBegin: number;
  /** The offset to pass for the next, older page. */
  lineEnd: number;
  totalLines: number;
  truncated: boolean;
}

export interface SpillPage {
  text: string;
  startLine: number;
  endLine: number;
  totalLines: number;
  nextOffset: number | null;
}

export interface InitializeResult {
  protocolVersion: string;
  serverInfo: { name: string; version: string };
  capabilities: Record<string, unknown>;
  /** The tools' guidance for a system prompt. */
  instructions: string;
  /** The same, tool by tool. */
  guidance?: Record<string, string>;
  ripgrep: { path: string; version: string };
  /**
   * The effective configuration: every configuration key (timeoutMs, grepMaxMatches, spillDir, …). The
   * daemon's --workdir is not one of them.
   */
  config: Record<string, unknown>;
  [key: string]: unknown;
}

export interface Tool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface ToolResult {
  content: { type: 'text'; text: string }[];
  structuredContent?: unknown;
  isError: boolean;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export declare class Client {
  /** Spawn the daemon and initialize the session; rejects with StartupError if it exits first. */
  static start(options: ClientOptions): Promise<Client>;
  constructor(options: ClientOptions);

  /** The answer to initialize: versions, the effective `config`, `instructions` (null with `initialize: false`). */
  readonly initializeResult: InitializeResult | null;
  /** The daemon's process id (of the PyInstaller onefile launcher); with a `launcher`, the launcher's. */
  readonly pid: number | null;
  /** `{code, signal}` once the daemon has exited, else null. */
  readonly exitStatus: ExitStatus | null;
  /** Settles when the daemon process exits. */
  readonly exited: Promise<ExitStatus>;
  /** The last lines the daemon wrote to stderr (with `stderr: 'capture'`). */
  readonly stderrTail: string;
  /** How many requests are waiting for an answer. */
  readonly pending: number;

  /** Any request; resolves with its result. */
  request<T = unknown>(method: string, params?: unknown, options?: CallOptions): Promise<T>;
  /** Any notification. */
  notify(method: string, params?: unknown): Promise<void>;

  /** Resolves with the daemon's answer, `{}`. */
  ping(options?: CallOptions): Promise<Record<string, unknown>>;
  toolsList(options?: CallOptions): Promise<Tool[]>;
  callTool(
    name: string,
    args: Record<string, unknown>,
    options?: CallOptions & { cwd?: string; sessionId?: string },
  ): Promise<ToolResult>;
  glob(pattern: string, options?: SearchOptions): Promise<GlobResult>;
  grep(pattern: string, options?: GrepOptions): Promise<GrepResult>;
  terminalSearch(sessionId: string, pattern: string, options?: TerminalSearchOptions): Promise<TerminalSearchResult>;
  scrollbackAppend(sessionId: string, data: string | Uint8Array, options?: CallOptions): Promise<AppendResult>;
  scrollbackAppendNoWait(sessionId: string, data: string | Uint8Array): Promise<void>;
  scrollbackRead(sessionId: string, options?: CallOptions & { offset?: number; count?: number }): Promise<ScrollbackPage>;
  scrollbackClose(sessionId: string, options?: CallOptions): Promise<boolean>;
  spillRead(spill: Spill | string, options?: CallOptions & { offset?: number; limit?: number }): Promise<SpillPage>;
  spillPages(spill: Spill | string, options?: CallOptions & { offset?: number; limit?: number }): AsyncGenerator<SpillPage, void, undefined>;
  /** `shutdown`: answered (null) once the searches already running have finished; close() does this too. */
  shutdown(): Promise<null>;
  /**
   * Graceful stop (shutdown, exit, close stdin, SIGTERM after a grace, SIGKILL last); idempotent. `shutdown`
   * lets running calls finish unless `cancel` (default: the cancelOnClose option) cancels them first.
   */
  close(options?: { cancel?: boolean }): Promise<ExitStatus | null>;
  [Symbol.asyncDispose](): Promise<void>;
}
