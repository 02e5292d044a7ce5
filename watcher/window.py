"""Frames (one poll's values for every node) and the sliding window they form."""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from watcher.errors import StoreError

_HEADER = struct.Struct("<I")  # length of the JSON header that precedes the float32 values


@dataclass
class Frame:
    time: float
    nodes: tuple[str, ...]
    values: dict[str, np.ndarray]  # metric key -> float32 values aligned with nodes, NaN = none

    @property
    def frame_id(self) -> str:
        return f"{self.time:.3f}"

    @classmethod
    def build(cls, at: float, by_metric: dict[str, dict[str, float]]) -> Frame:
        nodes = tuple(sorted(set().union(*by_metric.values()))) if by_metric else ()
        index = {n: i for i, n in enumerate(nodes)}
        values = {}
        for key, samples in by_metric.items():
            arr = np.full(len(nodes), np.nan, dtype=np.float32)
            if samples:
                arr[[index[n] for n in samples]] = list(samples.values())
            values[key] = arr
        return cls(at, nodes, values)

    def encode(self) -> bytes:
        keys = list(self.values)
        header = json.dumps({"t": self.time, "nodes": self.nodes, "keys": keys}).encode()
        body = b"".join(self.values[k].astype("<f4").tobytes() for k in keys)
        return zlib.compress(_HEADER.pack(len(header)) + header + body, 1)

    @classmethod
    def decode(cls, blob: bytes) -> Frame:
        try:
            raw = zlib.decompress(blob)
            (size,) = _HEADER.unpack_from(raw)
            header = json.loads(raw[_HEADER.size : _HEADER.size + size])
            body = np.frombuffer(raw[_HEADER.size + size :], dtype="<f4")
            n = len(header["nodes"])
            values = {k: body[i * n : (i + 1) * n].copy() for i, k in enumerate(header["keys"])}
            return cls(float(header["t"]), tuple(header["nodes"]), values)
        except (zlib.error, struct.error, ValueError, KeyError) as exc:
            raise StoreError(f"unreadable frame in the store: {exc}") from exc


class Window:
    """The frames of the last `length` seconds, oldest first."""

    def __init__(self, length: float) -> None:
        self.length = length
        self.frames: list[Frame] = []

    def __len__(self) -> int:
        return len(self.frames)

    def add(self, frame: Frame) -> None:
        if self.frames and frame.time <= self.frames[-1].time:
            return  # a warm-start or reloaded frame we already hold
        self.frames.append(frame)

    def trim(self, now: float) -> None:
        cutoff = now - self.length
        self.frames = [f for f in self.frames if f.time >= cutoff]

    def nodes(self) -> list[str]:
        seen: dict[str, None] = {}
        last: tuple[str, ...] | None = None
        for frame in self.frames:
            if frame.nodes is not last and frame.nodes != last:
                seen.update(dict.fromkeys(frame.nodes))
                last = frame.nodes
        return sorted(seen)

    def matrix(self, key: str, nodes: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(times of shape F, values of shape F x N) for one metric; NaN where no sample."""
        times = np.array([f.time for f in self.frames], dtype=np.float64)
        out = np.full((len(self.frames), len(nodes)), np.nan, dtype=np.float64)
        index = {n: i for i, n in enumerate(nodes)}
        cols: np.ndarray | None = None
        last: tuple[str, ...] | None = None
        for row, frame in enumerate(self.frames):
            values = frame.values.get(key)
            if values is None:
                continue
            if frame.nodes != last:  # consecutive frames usually share one node list
                cols = np.fromiter((index[n] for n in frame.nodes), dtype=np.intp)
                last = frame.nodes
            out[row, cols] = values
        return times, out

    def samples(self, key: str, node: str) -> list[tuple[float, float]]:
        out = []
        for frame in self.frames:
            values = frame.values.get(key)
            if values is None:
                continue
            try:
                i = frame.nodes.index(node)
            except ValueError:
                continue
            if not np.isnan(values[i]):
                out.append((frame.time, float(values[i])))
        return out
