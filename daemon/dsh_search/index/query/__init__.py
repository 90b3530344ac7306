"""What a ripgrep pattern requires of a file's text, and which trigrams an index looks up for it.

Pure and apart, as codesearch's `regexp.go` and Zoekt's `query/` are: a pattern string in, a plan out;
no file, no index, no IO (tests/unit/test_layout.py checks the imports).

    syntax.py    the pattern parsed as ripgrep's regex-syntax parses it
    analysis.py  `required(pattern)`: the formula of literals every matching file's text satisfies
    formula.py   the formula itself (ANY, NONE, Lit, And, Or), simplified and bounded, only ever weaker
    plan.py      the formula as trigrams to look up, rarest first, with an estimate of the files

Each step may lose precision, never a match: a file the plan rejects is a file where ripgrep reports
nothing.
"""
