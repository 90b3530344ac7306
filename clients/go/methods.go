package dshsearch

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
)

// InitializeResult is the daemon's answer to initialize.
type InitializeResult struct {
	// ProtocolVersion is the MCP revision the session speaks.
	ProtocolVersion string `json:"protocolVersion"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	// Ripgrep is the daemon's ripgrep sidecar (dsh-search-rg) and its version.
	Ripgrep struct {
		Path    string `json:"path"`
		Version string `json:"version"`
	} `json:"ripgrep"`
	// Instructions is guidance on the tools for a system prompt; Guidance the same, tool by tool.
	Instructions string            `json:"instructions"`
	Guidance     map[string]string `json:"guidance"`
	// Config is the daemon's effective configuration: every configuration key (timeoutMs, grepMaxMatches,
	// spillDir, …) as the daemon resolved it. --workdir is not a configuration key and is not in it.
	Config map[string]any `json:"config"`
}

// Progress is a progress report of a running search (MCP's notifications/progress), for the OnProgress of
// GlobParams, GrepParams and TerminalSearchParams: the first half a second after the call started (a faster
// call gets none), then at most two a second, never after the answer.
type Progress struct {
	// Progress is the seconds since the call started (grows with every report).
	Progress float64 `json:"progress"`
	// Message is what ripgrep found so far, e.g. "grep: 31 matches in 7 files so far".
	Message string `json:"message"`
}

// Tool is a model-facing tool from tools/list.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  map[string]any  `json:"annotations,omitempty"`
}

// ToolResult is an MCP tool result (tools/call). A failed search is IsError with the "Error: …" text.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// Spill locates the complete result of a capped search; page through it with SpillPager.
type Spill struct {
	Locator       string `json:"locator"`
	Bytes         int64  `json:"bytes"`
	RetrievalHint string `json:"retrievalHint"`
}

// GlobMeta is the page of paths shown inline, for a UI.
type GlobMeta struct {
	Shape     string   `json:"shape"` // "paths"
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated"`
	Total     int      `json:"total"`
}

// GrepMeta is the page of matches shown inline, for a UI.
type GrepMeta struct {
	Shape     string     `json:"shape"` // "matches"
	Files     []GrepFile `json:"files"`
	Truncated bool       `json:"truncated"`
	Total     int        `json:"total"`
}

// GrepFile is one file's matches in GrepMeta.
type GrepFile struct {
	Path    string     `json:"path"`
	Matches []GrepLine `json:"matches"`
}

// GrepLine is one matching line.
type GrepLine struct {
	LineNumber int    `json:"lineNumber"`
	Line       string `json:"line"`
}

// GlobResult: Text is what the model sees; Spill is set when the inline page was capped.
type GlobResult struct {
	Text  string   `json:"text"`
	Meta  GlobMeta `json:"meta"`
	Spill *Spill   `json:"spill"`
}

// GrepResult: Text is what the model sees; Spill is set when the inline page was capped.
type GrepResult struct {
	Text  string   `json:"text"`
	Meta  GrepMeta `json:"meta"`
	Spill *Spill   `json:"spill"`
}

// GlobParams are glob's parameters; empty fields are left out (Cwd defaults to the daemon's --workdir,
// SessionID, which groups spill artifacts, to "default").
type GlobParams struct {
	Pattern   string `json:"pattern"`
	Path      string `json:"path,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	// OnProgress, if set, is called with the daemon's progress reports while the call runs, from the
	// client's reader goroutine: return quickly.
	OnProgress func(Progress) `json:"-"`
}

// GrepParams are grep's parameters; Include is a ripgrep --glob filter such as "*.go".
type GrepParams struct {
	Pattern   string `json:"pattern"`
	Path      string `json:"path,omitempty"`
	Include   string `json:"include,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	// OnProgress: as in GlobParams.
	OnProgress func(Progress) `json:"-"`
}

// TerminalSearchParams: a literal substring unless Regex; Offset/Limit page over the matches (default
// 0 and 100).
type TerminalSearchParams struct {
	SessionID string `json:"sessionId"`
	Pattern   string `json:"pattern"`
	Regex     bool   `json:"regex,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	// OnProgress: as in GlobParams.
	OnProgress func(Progress) `json:"-"`
}

// TerminalMatch: Offset is newest-relative (a ScrollbackRead with it ends at the match line).
type TerminalMatch struct {
	Offset int    `json:"offset"`
	Line   string `json:"line"`
}

// TerminalSearchResult lists matches newest first.
type TerminalSearchResult struct {
	Text       string          `json:"text"`
	Matches    []TerminalMatch `json:"matches"`
	MatchCount int             `json:"matchCount"`
	TotalLines int             `json:"totalLines"`
	Truncated  bool            `json:"truncated"`
}

// AppendResult is the size of a scrollback after an append.
type AppendResult struct {
	TotalLines int  `json:"totalLines"`
	Truncated  bool `json:"truncated"`
}

// ScrollbackReadParams: Offset 0 is the newest line; Count defaults to 500.
type ScrollbackReadParams struct {
	SessionID string `json:"sessionId"`
	Offset    int    `json:"offset,omitempty"`
	Count     int    `json:"count,omitempty"`
}

// ScrollbackPage: LineEnd is the offset to pass for the next, older page.
type ScrollbackPage struct {
	Text       string `json:"text"`
	LineBegin  int    `json:"lineBegin"`
	LineEnd    int    `json:"lineEnd"`
	TotalLines int    `json:"totalLines"`
	Truncated  bool   `json:"truncated"`
}

// SpillReadParams: lines Offset..Offset+Limit-1, 1-based (defaults 1 and 2000).
type SpillReadParams struct {
	Locator string `json:"locator"`
	Offset  int    `json:"offset,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// SpillPage is one page of a saved result; NextOffset is nil at the end.
type SpillPage struct {
	Text       string `json:"text"`
	StartLine  int    `json:"startLine"`
	EndLine    int    `json:"endLine"`
	TotalLines int    `json:"totalLines"`
	NextOffset *int   `json:"nextOffset"`
}

// Ping checks that the daemon answers, and returns what it answers: an empty object.
func (c *Client) Ping(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	if err := c.Call(ctx, "ping", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ToolsList returns the model-facing tools. The list may grow during a session
// (notifications/tools/list_changed), e.g. terminal_search once a scrollback exists.
func (c *Client) ToolsList(ctx context.Context) ([]Tool, error) {
	var out struct {
		Tools []Tool `json:"tools"`
	}
	err := c.Call(ctx, "tools/list", nil, &out)
	return out.Tools, err
}

// CallTool is MCP's tools/call; cwd and sessionID (optional) go in _meta.
func (c *Client) CallTool(ctx context.Context, name string, arguments any, cwd, sessionID string) (*ToolResult, error) {
	params := map[string]any{"name": name, "arguments": arguments}
	meta := map[string]any{}
	if cwd != "" {
		meta["cwd"] = cwd
	}
	if sessionID != "" {
		meta["sessionId"] = sessionID
	}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	var out ToolResult
	if err := c.Call(ctx, "tools/call", params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Glob lists files matching a glob pattern, oldest modification first (capped inline; see Spill).
func (c *Client) Glob(ctx context.Context, p GlobParams) (*GlobResult, error) {
	var out GlobResult
	if err := c.search(ctx, "glob", p, p.OnProgress, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Grep finds lines matching a ripgrep regex, grouped by file (capped inline; see Spill).
func (c *Client) Grep(ctx context.Context, p GrepParams) (*GrepResult, error) {
	var out GrepResult
	if err := c.search(ctx, "grep", p, p.OnProgress, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TerminalSearch searches a terminal's retained scrollback, newest match first.
func (c *Client) TerminalSearch(ctx context.Context, p TerminalSearchParams) (*TerminalSearchResult, error) {
	var out TerminalSearchResult
	if err := c.search(ctx, "terminal_search", p, p.OnProgress, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ScrollbackAppend appends terminal output (text) to a session's scrollback, creating the session.
func (c *Client) ScrollbackAppend(ctx context.Context, sessionID, data string) (*AppendResult, error) {
	var out AppendResult
	if err := c.Call(ctx, "scrollback/append", map[string]any{"sessionId": sessionID, "data": data}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ScrollbackAppendBytes appends raw PTY bytes (any encoding; the daemon decodes them).
func (c *Client) ScrollbackAppendBytes(ctx context.Context, sessionID string, data []byte) (*AppendResult, error) {
	var out AppendResult
	params := map[string]any{"sessionId": sessionID, "dataBase64": base64.StdEncoding.EncodeToString(data)}
	if err := c.Call(ctx, "scrollback/append", params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ScrollbackAppendNoWait appends as a notification: nothing is waited for.
func (c *Client) ScrollbackAppendNoWait(sessionID, data string) error {
	return c.Notify("scrollback/append", map[string]any{"sessionId": sessionID, "data": data})
}

// ScrollbackRead returns a page of retained output in terminal_read's coordinates.
func (c *Client) ScrollbackRead(ctx context.Context, p ScrollbackReadParams) (*ScrollbackPage, error) {
	var out ScrollbackPage
	if err := c.Call(ctx, "scrollback/read", p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ScrollbackClose frees a session's scrollback; false if there was none.
func (c *Client) ScrollbackClose(ctx context.Context, sessionID string) (bool, error) {
	var out struct {
		Closed bool `json:"closed"`
	}
	err := c.Call(ctx, "scrollback/close", map[string]any{"sessionId": sessionID}, &out)
	return out.Closed, err
}

// SpillRead returns lines of a saved complete result.
func (c *Client) SpillRead(ctx context.Context, p SpillReadParams) (*SpillPage, error) {
	var out SpillPage
	if err := c.Call(ctx, "spill/read", p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SpillPager pages through a saved complete result in order:
//
//	pager := client.SpillPager(result.Spill.Locator, 500)
//	for {
//		page, err := pager.Next(ctx)
//		if err == io.EOF {
//			break
//		}
//		...
//	}
type SpillPager struct {
	client  *Client
	locator string
	limit   int
	next    *int
}

// SpillPager starts at line 1; limit 0 means the daemon's default (2000 lines).
func (c *Client) SpillPager(locator string, limit int) *SpillPager {
	first := 1
	return &SpillPager{client: c, locator: locator, limit: limit, next: &first}
}

// Next returns the next page, or io.EOF after the last one.
func (p *SpillPager) Next(ctx context.Context) (*SpillPage, error) {
	if p.next == nil {
		return nil, io.EOF
	}
	page, err := p.client.SpillRead(ctx, SpillReadParams{Locator: p.locator, Offset: *p.next, Limit: p.limit})
	if err != nil {
		return nil, err
	}
	p.next = page.NextOffset
	return page, nil
}
