"""The cache's watch reader: lines split across chunks, and documents orjson refuses."""

from __future__ import annotations

from scheduler.backend.cache import decode, stream_lines


class _Resp:
    def __init__(self, chunks: list[bytes | str]) -> None:
        self._chunks = chunks

    def stream(self, amt: None = None, decode_content: bool = False):  # noqa: ARG002
        yield from self._chunks


def test_lines_split_across_chunks_and_empty_lines_dropped() -> None:
    chunks: list[bytes | str] = [b'{"a":', b'1}\n{"b"', b":2}\n\n", '{"c":3}\n{"d":4}']
    assert [decode(line) for line in stream_lines(_Resp(chunks))] == [
        {"a": 1},
        {"b": 2},
        {"c": 3},
        {"d": 4},
    ]


def test_decode_replaces_invalid_utf8_as_the_client_did() -> None:
    assert decode(b'{"s": "\xff"}') == {"s": "\ufffd"}
