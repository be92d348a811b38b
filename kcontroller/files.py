"""Files the commands write for people (reports, sweep results): whole or not at all."""
from __future__ import annotations

import os


def write_text_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it, creating its directory: a
    reader never sees half a file, and a failed write leaves the previous one in place."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
