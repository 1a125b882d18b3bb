"""Remote engines: an OpenAI-compatible server behind the in-process engine's surface.

``RemoteEngine(url)`` yields the same typed events as ``Engine`` (``_chunk_reader`` turns the
server's chunks into them), so the notebook's turn, widgets and tool loop work unchanged.
"""

from ._chunk_reader import ChunkReader
from ._remote_engine import RemoteEngine, RemoteHandle, guess_family

__all__ = ["RemoteEngine", "RemoteHandle", "ChunkReader", "guess_family"]
