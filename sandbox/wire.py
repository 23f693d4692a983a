"""Framing of the verdict channel between the in-sandbox harness and the trusted side.

Standard library only: this file is copied into every job and imported by the harness.
A frame is a fixed 8-byte header (JSON length, blob length, both big-endian u32), a UTF-8
JSON object and an optional binary blob (tensors in safetensors format). Hand-written because
the channel must be parsed incrementally under hard size caps before anything is decoded,
which no serialisation library offers for a raw pipe.
"""
from __future__ import annotations

import json
import os
import struct

HEADER = struct.Struct(">II")
MAX_JSON_BYTES = 1 << 20


class FrameError(ValueError):
    """The stream broke the framing rules (oversized, malformed): the sender is not trusted."""


def encode_frame(message: dict, blob: bytes = b"") -> bytes:
    body = json.dumps(message, ensure_ascii=False, allow_nan=True).encode("utf-8")
    return HEADER.pack(len(body), len(blob)) + body + blob


def write_frame(fd: int, message: dict, blob: bytes = b"") -> None:
    data = memoryview(encode_frame(message, blob))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class FrameReader:
    """Incremental decoder with caps checked before any byte is parsed."""

    def __init__(self, *, max_blob_bytes: int, max_total_bytes: int) -> None:
        self._buffer = bytearray()
        self._max_blob = max_blob_bytes
        self._max_total = max_total_bytes
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> list[tuple[dict, bytes]]:
        self.total_bytes += len(chunk)
        if self.total_bytes > self._max_total:
            raise FrameError(f"verdict channel exceeded {self._max_total} bytes")
        self._buffer.extend(chunk)
        frames = []
        while len(self._buffer) >= HEADER.size:
            json_len, blob_len = HEADER.unpack_from(self._buffer)
            if json_len > MAX_JSON_BYTES:
                raise FrameError(f"frame header of {json_len} bytes exceeds {MAX_JSON_BYTES}")
            if blob_len > self._max_blob:
                raise FrameError(f"output of {blob_len} bytes exceeds the cap of {self._max_blob}")
            end = HEADER.size + json_len + blob_len
            if len(self._buffer) < end:
                break
            raw = bytes(self._buffer[HEADER.size : HEADER.size + json_len])
            blob = bytes(self._buffer[HEADER.size + json_len : end])
            del self._buffer[:end]
            try:
                message = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, a 5000-digit int, deep nesting
                raise FrameError(f"malformed frame: {type(exc).__name__}: {str(exc)[:200]}") from None
            if not isinstance(message, dict) or not isinstance(message.get("type"), str):
                raise FrameError("frame is not an object with a 'type'")
            frames.append((message, blob))
        return frames

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)
