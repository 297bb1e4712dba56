"""The language server's input stream, bounded: what pygls reads from stdin (a header line,
then a body of the length the header says) never costs more memory than a set limit.

pygls reads a body with one `read(Content-Length)`: one frame that claimed 1,000,000,000,000
bytes ended the server with a MemoryError before a byte of it came. Here a header line is
read up to MAX_HEADER_LINE bytes, and a body over MAX_MESSAGE is read and discarded in chunks
(the stream stays in step with the client's framing); pygls is then handed a notification
saying so (DISCARDED), which the server answers with an error in the client's log.
"""
from __future__ import annotations

import json
from typing import BinaryIO

# The largest message body the server reads (bytes): a `didOpen` of a document of the CLI's
# largest `max-file-size` is well under it, even with every character escaped as \\uXXXX.
MAX_MESSAGE = 64 << 20
MAX_HEADER_LINE = 8 << 10
DISCARDED = "$/jaxfuse-lint/messageDiscarded"
_CHUNK = 1 << 20


class BoundedInput:
    """`stream` (the server's stdin) as pygls reads it: `readline()` and `read(n)`."""

    def __init__(self, stream: BinaryIO, limit: int = MAX_MESSAGE) -> None:
        self.stream = stream
        self.limit = limit

    def readline(self) -> bytes:
        return self.stream.readline(MAX_HEADER_LINE)

    def read(self, n: int) -> bytes:
        if n <= self.limit:
            return self.stream.read(n)
        left = n
        while left > 0:
            chunk = self.stream.read(min(left, _CHUNK))
            if not chunk:
                return b""  # the client went away mid-message: the end of the input, as for any other
            left -= len(chunk)
        return json.dumps({"jsonrpc": "2.0", "method": DISCARDED,
                           "params": {"size": n, "limit": self.limit}}).encode()


def discarded_message(params) -> str:
    """The error the server logs for a message it discarded (DISCARDED's params)."""
    size, limit = _get(params, "size"), _get(params, "limit")
    return (f"jaxfuse-lint: a message of {size:,} bytes was ignored: messages are limited to {limit:,} bytes"
            if isinstance(size, int) and isinstance(limit, int) else "jaxfuse-lint: a message was ignored")


def _get(params, key: str):
    return params.get(key) if isinstance(params, dict) else getattr(params, key, None)
