"""The lean HTTP/1.1 reader of scheduler/kube/transport.py on answers as bytes."""

from __future__ import annotations

import io

import pytest

from scheduler.kube.transport import BadAnswer, _read_answer


def read(raw: bytes, method: str = "GET") -> tuple[int, bytes, bool]:
    return _read_answer(io.BufferedReader(io.BytesIO(raw)), method)


def test_a_content_length_body_keeps_the_connection():
    raw = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
    raw += b'{"a":1}'
    assert read(raw) == (201, b'{"a":1}', True)


def test_a_chunked_body_with_extensions_and_trailers_is_joined():
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4;ext=1\r\n{"a"\r\n3\r\n:1}\r\n0\r\nX-Trailer: y\r\n\r\n'
        b"HTTP/1.1 200 OK\r\n"  # the next answer on the connection is left unread
    )
    stream = io.BufferedReader(io.BytesIO(raw))
    assert _read_answer(stream, "GET") == (200, b'{"a":1}', True)
    assert stream.readline() == b"HTTP/1.1 200 OK\r\n"


def test_connection_close_and_http_1_0_do_not_keep_the_connection():
    assert read(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")[2] is False
    assert read(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")[2] is False
    # No length and not chunked: the body runs to the end of the connection.
    assert read(b"HTTP/1.1 200 OK\r\n\r\nto the end") == (200, b"to the end", False)


def test_interim_answers_are_skipped_and_bodiless_answers_read_nothing():
    raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
    assert read(raw) == (204, b"", True)
    assert read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD") == (200, b"", True)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"SSH-2.0-OpenSSH_9.2\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde",
    ],
    ids=["nothing", "not-http", "body-short", "headers-cut", "chunk-short", "chunk-unended"],
)
def test_a_broken_answer_is_a_transport_error(raw):
    with pytest.raises(BadAnswer):
        read(raw)
