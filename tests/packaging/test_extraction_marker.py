"""The marker that makes an extraction directory recognisably dsh-search's is the first file unpacked.

A launcher killed while it unpacks leaves a partial directory; a later daemon sweeps it only when it is
marked (daemon/dsh_search/extraction.py), so the marker must come before everything else."""

from __future__ import annotations

from pathlib import Path

from dsh_search.extraction import MARKER
from tests.support.locations import ROOT

BOOTSTRAP = {"m", "M", "s", "o"}  # modules and scripts the bootloader runs from memory; run-time options


def test_the_marker_is_the_first_file_the_launcher_unpacks(exe: Path) -> None:
    from PyInstaller.archive.readers import CArchiveReader

    archive = CArchiveReader(str(exe))
    unpacked = [(name, entry[-1]) for name, entry in archive.toc.items() if entry[-1] not in BOOTSTRAP]
    assert unpacked[0] == (MARKER, "b"), unpacked[:3]
    assert archive.extract(MARKER) == (ROOT / "packaging" / MARKER).read_bytes()
    assert (ROOT / "packaging" / MARKER).stat().st_mode & 0o111, "the marker must stay executable (see the spec)"
