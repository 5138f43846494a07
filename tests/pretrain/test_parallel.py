"""The builder's worker pool (pretrain/dataset_builder/parallel.py)."""

import multiprocessing
import os

import pytest

from pretrain.dataset_builder import parallel

# One task per job (each task's text is this long), so jobs run out of order.
_TEXT = "x" * 8


class _Echo(object):
  """A stand-in for ExampleBuilder: the task itself, and this process's id."""

  def build(self, relpath, chunk_index, text):
    return (relpath, chunk_index, len(text), os.getpid())


class _Fails(_Echo):

  def build(self, relpath, chunk_index, text):
    if chunk_index == 5:
      raise ValueError("chunk %d is bad" % chunk_index)
    return super().build(relpath, chunk_index, text)


class _Dies(_Echo):

  def build(self, relpath, chunk_index, text):
    if chunk_index == 3:
      os._exit(7)  # pylint: disable=protected-access
    return super().build(relpath, chunk_index, text)


def _tasks(n):
  return [("f%d.txt" % (i % 3), i, _TEXT) for i in range(n)]


def _run(builder, n, num_processes):
  return list(parallel.ordered_results(builder, _tasks(n), num_processes,
                                       job_chars=len(_TEXT)))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_results_come_in_task_order_from_several_workers(monkeypatch, method):
  # The builder picks "spawn" once this process runs TensorFlow.
  monkeypatch.setattr(parallel, "start_method", lambda: method)
  got = _run(_Echo(), 30, 3)
  assert [task for task, _ in got] == _tasks(30)
  assert [r[:3] for _, r in got] == [t[:2] + (len(_TEXT),) for t in _tasks(30)]
  pids = {r[3] for _, r in got}
  assert pids and os.getpid() not in pids
  assert not multiprocessing.active_children()


def test_one_process_builds_here():
  got = _run(_Echo(), 4, 1)
  assert {r[3] for _, r in got} == {os.getpid()}


def test_a_worker_exception_reaches_the_caller():
  with pytest.raises(ValueError, match="chunk 5 is bad") as info:
    _run(_Fails(), 12, 2)
  assert isinstance(info.value.__cause__, parallel.WorkerTraceback)
  assert "chunk 5 is bad" in str(info.value.__cause__)
  assert not multiprocessing.active_children()


def test_a_dead_worker_fails_the_build_instead_of_hanging():
  with pytest.raises(RuntimeError, match="worker process of the builder died"):
    _run(_Dies(), 12, 2)
  assert not multiprocessing.active_children()


def test_stopping_early_stops_the_workers():
  results = parallel.ordered_results(_Echo(), _tasks(40), 2,
                                     job_chars=len(_TEXT))
  assert next(results)[0] == _tasks(1)[0]
  results.close()
  assert not multiprocessing.active_children()
