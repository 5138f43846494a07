"""The builder's progress line on stderr: files done / total, MB, MB/s, ETA."""

import sys
import time


class Progress(object):
  """Writes the progress line, at most every 0.5 s on a terminal, 10 s else.

  Args:
    total_files: files in the corpus.
    total_bytes: their size in bytes.
    stream: where the line goes (default sys.stderr); on a terminal it is
      rewritten in place.
  """

  def __init__(self, total_files, total_bytes, stream=None):
    self.total_files = total_files
    self.total_bytes = max(1, total_bytes)
    self.stream = stream or sys.stderr
    self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
    self.start = time.time()
    self._last = 0.0

  def update(self, files_done, bytes_done, final=False):
    now = time.time()
    if not final and now - self._last < (0.5 if self.tty else 10.0):
      return
    self._last = now
    elapsed = max(now - self.start, 1e-6)
    rate = bytes_done / elapsed
    eta = (self.total_bytes - bytes_done) / rate if rate > 0 else 0.0
    line = "[build] files %d/%d  %.1f/%.1f MB  %.1f MB/s  ETA %d:%02d" % (
        files_done, self.total_files, bytes_done / 1e6, self.total_bytes / 1e6,
        rate / 1e6, int(eta) // 60, int(eta) % 60)
    if self.tty:
      self.stream.write("\r" + line + ("\n" if final else ""))
    else:
      self.stream.write(line + "\n")
    self.stream.flush()
