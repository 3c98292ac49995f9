"""TensorBoard event files written in the caller's thread, so that a full disk stops the run like any other write.

torch's SummaryWriter hands its events to a thread of its own (tensorboard's EventFileWriter): a write that
fails there raises in that thread, where `writing(path)` cannot guard it, and reaches the trainer late if at
all, as an untyped exception. EventFile writes the same files synchronously: tensorboard's protobufs for the
events, its RecordWriter for the framing and checksums, each open, write, flush and close inside
`writing(path)`.

Importing this module costs about 80 ms (protobuf, tensorboard's summary package): import it on first use.
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from contextlib import suppress
from pathlib import Path

from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.record_writer import RecordWriter

from a3c.errors import WriteError, writing

FILE_VERSION = "brain.Event:2"  # the first event of a file: TensorBoard's reader learns the format from it
_files_opened = itertools.count()  # two files opened in the same second (a quick resume) get different names


def event_file_name() -> str:
    """events.out.tfevents.<unix time>.<hostname>.<pid>.<n>: the naming TensorBoard looks for (and the one
    SummaryWriter used, so that new files sort after those of older runs)."""
    return f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{next(_files_opened)}"


class EventFile:
    """A new event file in `log_dir` (a run, or each resume of it, gets its own): scalars in, one event a step."""

    def __init__(self, log_dir: Path):
        self.path = log_dir / event_file_name()
        with writing(self.path):
            log_dir.mkdir(parents=True, exist_ok=True)
            self._records = RecordWriter(open(self.path, "wb"))
        try:
            self._write(Event(wall_time=time.time(), file_version=FILE_VERSION))
        except WriteError:
            with suppress(WriteError):  # the same full disk fails the close's flush too: the file is closed anyway
                self.close()
            raise

    def write_scalars(self, step: int, scalars: dict[str, float]) -> None:
        """One event holding every scalar of `step`, flushed at once as the CSV rows are."""
        values = [Summary.Value(tag=tag, simple_value=value) for tag, value in scalars.items()]
        self._write(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))

    def _write(self, event: Event) -> None:
        with writing(self.path):
            self._records.write(event.SerializeToString())
            self._records.flush()

    def close(self) -> None:
        with writing(self.path):
            self._records.close()
