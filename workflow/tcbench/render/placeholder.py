"""A figure that has nothing to show is not drawn: its file (every format the workflow declares)
is a note saying why (over what the experiment ran: ``render.status``), marked as such in the
file's own metadata, so that the report, a test or a reader's script can tell "not drawn,
because ..." from a figure. Standard library only: the workflow reads the mark while it builds
the report.

The mark: PNG text chunk ``Description``, SVG ``<dc:description>``, PDF ``/Subject``, each
``"not drawn: <reason>"``. ``render.plot.save_as`` writes it (``plot.NotDrawn``).
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

NOT_DRAWN = "not drawn"
MARK = f"{NOT_DRAWN}: "
KEY = {"png": "Description", "svg": "Description", "pdf": "Subject"}


def mark(reason: str) -> str:
    return MARK + reason


def _png_texts(data: bytes) -> dict[str, str]:
    """The text chunks (tEXt, zTXt, iTXt) of a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    out, at = {}, 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            out[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            compressed, rest = rest[0], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _translated, _, text = rest.partition(b"\0")
            out[key.decode("latin-1")] = (zlib.decompress(text) if compressed
                                          else text).decode("utf-8")
        elif kind == b"IEND":
            break
    return out


def _pdf_string(raw: bytes) -> str:
    """A PDF string object's text: a literal ``(...)`` with its escapes, or ``<hex>``."""
    if raw.startswith(b"<"):
        data = bytes.fromhex(raw[1:-1].decode("ascii"))
        return data[2:].decode("utf-16-be") if data[:2] == b"\xfe\xff" else data.decode(
            "latin-1")
    body = re.sub(rb"\\([nrtbf()\\])", lambda m: {b"n": b"\n", b"r": b"\r", b"t": b"\t",
                                                   b"b": b"\b", b"f": b"\f"}.get(
        m.group(1), m.group(1)), raw[1:-1])
    # text beyond latin-1 is UTF-16BE behind its byte-order mark
    return body[2:].decode("utf-16-be") if body[:2] == b"\xfe\xff" else body.decode("latin-1")


def description(path: Path) -> str | None:
    """The text a figure file carries in the metadata field the mark goes into (None where
    it has none)."""
    path = Path(path)
    ext = path.suffix.removeprefix(".")
    data = path.read_bytes()
    if ext == "png":
        return _png_texts(data).get(KEY["png"])
    if ext == "svg":
        m = re.search(r"<dc:description>(.*?)</dc:description>", data.decode("utf-8"), re.S)
        return None if m is None else (m.group(1).replace("&lt;", "<").replace("&gt;", ">")
                                       .replace("&quot;", '"').replace("&amp;", "&"))
    if ext == "pdf":
        m = re.search(rb"/Subject\s*(\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>)", data)
        return None if m is None else _pdf_string(m.group(1))
    raise ValueError(f"{path}: not a figure format this reads (png, svg, pdf)")


def reason(path: Path) -> str | None:
    """Why the figure at ``path`` was not drawn; None for a drawn figure."""
    text = description(path)
    return text[len(MARK):] if text and text.startswith(MARK) else None


def label(path: Path) -> str:
    """The report's "drawn" column for a figure file: "yes", or "no: <why>"."""
    why = reason(path)
    return "yes" if why is None else f"no: {why}"
