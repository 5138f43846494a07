"""The builder's chunks, built in worker processes, yielded in corpus order.

Each worker process receives the ExampleBuilder once, as the argument of its
loop (inherited when forked, pickled once when spawned), and then takes jobs
(lists of consecutive chunks) from a queue; results are put back tagged with
the job's index and handed out in submission order, so the output does not
depend on the number of processes. No state lives at module level.
"""

import collections
import gc
import multiprocessing
import pickle
import queue
import signal
import sys
import traceback

from pretrain.dataset_builder import text as text_lib

# How long to wait for a result before checking that the workers still live.
_POLL_SECONDS = 1.0


class WorkerTraceback(Exception):
  """The traceback of an exception raised in a worker (set as its __cause__)."""


def _jobs(tasks, size):
  """Groups consecutive chunks into jobs of about `size` characters.

  A corpus of many small files then costs few round trips to the workers.
  """
  job, chars = [], 0
  for task in tasks:
    job.append(task)
    chars += len(task[2])
    if chars >= size:
      yield job
      job, chars = [], 0
  if job:
    yield job


def _tf_runtime_started():
  """Whether this process has started the TensorFlow runtime (thread pools)."""
  if "tensorflow" not in sys.modules:
    return False
  try:
    from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
    return bool(context.context()._initialized)  # pylint: disable=protected-access
  except Exception:  # pylint: disable=broad-except
    return True


def start_method():
  """'fork' (cheap: TensorFlow is imported already) unless it is unsafe.

  A forked child of a process whose TF runtime runs would inherit its locks
  but not its threads, and can hang; then the workers are spawned (each
  imports TensorFlow: a few seconds more).
  """
  if ("fork" in multiprocessing.get_all_start_methods() and
      not _tf_runtime_started()):
    return "fork"
  return "spawn"


def _work(builder, jobs, results):
  """A worker's loop: (index, tasks) from `jobs` -> (index, results, error)."""
  # Stop signals are the parent's to handle (util/interrupt.py); it stops
  # the workers (`WorkerPool.close`, with SIGTERM when they are not done).
  # A forked worker would inherit the parent's handlers and print a
  # traceback on the way out.
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  signal.signal(signal.SIGTERM, signal.SIG_DFL)
  signal.signal(signal.SIGHUP, signal.SIG_DFL)
  for index, tasks in iter(jobs.get, None):
    try:
      results.put((index, [builder.build(*task) for task in tasks], None))
    except Exception as e:  # pylint: disable=broad-except
      trace = traceback.format_exc()
      try:
        pickle.dumps(e)
      except Exception:  # pylint: disable=broad-except
        e = RuntimeError("%s: %s" % (type(e).__name__, e))
      results.put((index, None, (e, trace)))


class WorkerPool(object):
  """Worker processes that run `builder.build` on jobs, results in order.

  Args:
    builder: an object with build(relpath, chunk_index, text) (picklable when
      the workers are spawned).
    num_processes: worker processes (>= 1).
    method: the multiprocessing start method ("fork" or "spawn").
  """

  def __init__(self, builder, num_processes, method):
    context = multiprocessing.get_context(method)
    self._jobs = context.Queue()
    self._results = context.Queue()
    self._submitted = 0
    self._next = 0
    self._arrived = {}
    self._frozen = method == "fork"
    if self._frozen:
      # Forked workers share this process's memory until they write to it;
      # keep the garbage collector from touching (and so copying) it all.
      gc.freeze()
    self._processes = [
        context.Process(target=_work, args=(builder, self._jobs,
                                            self._results), daemon=True)
        for _ in range(num_processes)]
    for process in self._processes:
      process.start()

  def submit(self, tasks):
    self._jobs.put((self._submitted, tasks))
    self._submitted += 1

  def next_result(self):
    """The results of the oldest job not yet returned (a list, one per task).

    Raises:
      the worker's exception, or RuntimeError when a worker died.
    """
    while self._next not in self._arrived:
      try:
        index, value, error = self._results.get(timeout=_POLL_SECONDS)
      except queue.Empty:
        if any(p.exitcode is not None for p in self._processes):
          raise RuntimeError(
              "a worker process of the builder died (out of memory?); try "
              "fewer --num-processes") from None
        continue
      if error is not None:
        raise error[0] from WorkerTraceback(error[1])
      self._arrived[index] = value
    self._next += 1
    return self._arrived.pop(self._next - 1)

  def close(self):
    """Stops the workers: lets them finish when every result was taken,
    else terminates them."""
    finished = self._next == self._submitted
    if finished:
      for _ in self._processes:
        self._jobs.put(None)
    else:
      self._jobs.cancel_join_thread()
    for process in self._processes:
      if not finished:
        process.terminate()
      process.join()
    if self._frozen:
      gc.unfreeze()


def ordered_results(builder, tasks, num_processes, job_chars=None):
  """Yields (task, builder.build(*task)) in task order.

  Args:
    builder: an ExampleBuilder (or any object with that build method).
    tasks: iterable of (relpath, chunk_index, text).
    num_processes: 1 builds in this process; more use a WorkerPool, with at
      most 2 * num_processes jobs in flight so that memory stays bounded.
    job_chars: characters per job (default text.CHUNK_CHARS, read at call).
  """
  if num_processes == 1:
    for task in tasks:
      yield task, builder.build(*task)
    return
  pool = WorkerPool(builder, num_processes, start_method())
  try:
    pending = collections.deque()
    for job in _jobs(tasks, job_chars or text_lib.CHUNK_CHARS):
      pool.submit(job)
      pending.append(job)
      if len(pending) >= 2 * num_processes:
        yield from zip(pending.popleft(), pool.next_result())
    while pending:
      yield from zip(pending.popleft(), pool.next_result())
  finally:
    pool.close()
