"""A progress bar on stderr for long batched work (``progress=True``, the CLI's ``--progress``)."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """``what [#####.....]  42%  1,234 units/s  note``, redrawn in place on stderr; a newline when
    ``done`` reaches ``total``. The rate is counted since the bar was made."""

    width = 30

    def __init__(self, total: int, what: str, unit: str):
        self.total, self.what, self.unit, self.start = max(int(total), 1), what, unit, time.perf_counter()

    def __call__(self, done: int, note: str = "") -> None:
        done = min(int(done), self.total)
        filled = self.width * done // self.total
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        sys.stderr.write(
            f"\rjaxpuffer: {self.what} [{'#' * filled}{'.' * (self.width - filled)}] {100 * done // self.total:3d}%  "
            f"{rate:,.0f} {self.unit}/s{'  ' + note if note else ''}"
        )
        if done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()
