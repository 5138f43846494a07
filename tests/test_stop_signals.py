"""util/interrupt.py: Ctrl-C, SIGTERM and SIGHUP stop a run cleanly.

The stop requests are checked in this process; an entry script's exit
codes and clean-up, and the study runner's passing a signal on to its
child, in small Python processes (no TensorFlow: each takes a fraction of
a second). tests/test_faults.py sends the signals to a real pre-training.
"""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests import finetune_fixtures as ff
from tests import paths
from util import interrupt

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


@pytest.mark.parametrize("signum", sorted(CODES))
def test_the_first_signal_requests_a_stop_and_the_second_aborts(signum):
  before = signal.getsignal(signum)
  with interrupt.stop_requests() as stop:
    os.kill(os.getpid(), signum)
    assert stop.requested and stop.signum == signum
    with pytest.raises(KeyboardInterrupt) as raised:
      os.kill(os.getpid(), signum)
    assert interrupt.stop_signal(raised.value) == signum
  assert signal.getsignal(signum) is before


def _start(tmp_path, body):
  """A Python process running `body` as run_main's main (with `tmp` its
  folder); returns it once it has printed "ready"."""
  script = tmp_path / "script.py"
  script.write_text(textwrap.dedent("""\
      import os, subprocess, sys, time
      from util import interrupt
      from util.cli import run_main
      tmp = %r
      def main(argv):
      """ % str(tmp_path)) + textwrap.indent(textwrap.dedent(body), "  ") +
      "run_main(main)\n")
  proc = subprocess.Popen([sys.executable, str(script)], cwd=paths.REPO,
                          env=dict(os.environ, PYTHONPATH=paths.REPO),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
  assert proc.stdout.readline().strip() == "ready", proc.communicate()
  return proc


@pytest.mark.parametrize("signum", sorted(CODES))
def test_an_entry_script_unwinds_says_one_line_and_exits_128_plus_n(
    tmp_path, signum):
  lock = tmp_path / ".lock"
  proc = _start(tmp_path, """\
      open(os.path.join(tmp, ".lock"), "w").close()
      try:
        print("ready", flush=True)
        time.sleep(60)
      finally:
        os.remove(os.path.join(tmp, ".lock"))
      """)
  proc.send_signal(signum)
  _, err = proc.communicate(timeout=30)
  assert proc.returncode == CODES[signum], err
  assert err.count("stopped: interrupted (%s)" %
                   interrupt.signal_name(signum)) == 1, err
  assert "Traceback" not in err
  assert not lock.exists()  # The `finally` ran: the lock is released.


CHILD = """\
import os, signal, sys, time
def stop(signum, frame):
  time.sleep(0.5)  # Saving.
  open(sys.argv[1], "w").write("saved on %d" % signum)
  sys.exit(128 + signum)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)
signal.signal(signal.SIGINT, stop)
open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
time.sleep(60)
"""


def _parent_of_child(tmp_path):
  (tmp_path / "child.py").write_text(CHILD)
  saved = tmp_path / "saved"
  proc = _start(tmp_path, """\
      child = [sys.executable, os.path.join(tmp, "child.py"),
               os.path.join(tmp, "saved")]
      print("ready", flush=True)
      sys.exit(interrupt.run_child(child))
      """)
  pid_file = tmp_path / "saved.pid"
  for _ in range(300):
    if pid_file.exists() and pid_file.read_text():
      break
    time.sleep(0.05)
  return proc, saved, int(pid_file.read_text())


def _gone(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return True
  return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_study_runner_passes_a_stop_on_to_its_child_and_waits(
    tmp_path, signum):
  proc, saved, child = _parent_of_child(tmp_path)
  proc.send_signal(signum)
  _, err = proc.communicate(timeout=30)
  assert proc.returncode == CODES[signum], err
  assert saved.read_text() == "saved on %d" % signum
  assert _gone(child)


def test_a_killed_parent_leaves_no_child_writing_on(tmp_path):
  proc, saved, child = _parent_of_child(tmp_path)
  proc.kill()
  proc.communicate(timeout=30)
  for _ in range(200):
    if saved.exists() and _gone(child):
      break
    time.sleep(0.05)
  assert saved.read_text() == "saved on %d" % signal.SIGTERM
  assert _gone(child)


def test_a_stopped_dataset_build_leaves_no_output_and_no_worker(tmp_path):
  """SIGTERM to build_pretraining_dataset.py while its two workers run:
  exit 143, one line, no traceback (from the workers either), no output
  directory, no worker left."""
  words = [w.strip() for w in open(ff.VOCAB_FILE) if w.strip().isalpha()]
  rng = random.Random(0)
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  for i in range(24):  # About 24 MB: several seconds of building.
    (corpus / ("%d.txt" % i)).write_text("\n".join(
        " ".join(rng.choice(words) for _ in range(12)) + "."
        for _ in range(16000)))
  out = tmp_path / "out"
  proc = subprocess.Popen(
      [sys.executable, "build_pretraining_dataset.py", "--corpus-dir",
       str(corpus), "--vocab-file", ff.VOCAB_FILE, "--output-dir", str(out),
       "--num-processes", "2"], cwd=paths.REPO, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True, start_new_session=True)
  lines = []
  for line in proc.stdout:  # Wait for the build to be under way.
    lines.append(line)
    if line.startswith("[build] files"):
      break
  proc.send_signal(signal.SIGTERM)
  try:
    rest, _ = proc.communicate(timeout=60)
  except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)  # A hung build, and its workers.
    raise
  lines += rest.splitlines(keepends=True)
  assert proc.returncode == 143, "".join(lines)
  assert [line for line in lines if line.startswith("stopped:")] == [
      "stopped: interrupted (SIGTERM); the last checkpoint or output written "
      "before it is kept.\n"]
  assert not [line for line in lines if "Traceback" in line], lines
  assert not out.exists()
  # No process of its session (the workers) is left.
  time.sleep(0.5)
  left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True,
                        text=True).stdout.split()
  assert not left, left
