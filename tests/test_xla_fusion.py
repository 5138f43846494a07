"""hparam fuse_elementwise (util/xla_fusion.py): the choice, the start-up
environment, and a tiny bfloat16 run_pretraining.py run that turns it on."""


import pytest

import configure
import configure_specs
from tests import pretrain_fixtures
from util import xla_fusion
from util.hparams import ConfigError

_ON = "--tf_xla_cpu_global_jit --tf_xla_ops_to_cluster=FUSIBLE"


@pytest.mark.parametrize("setting, dtype, device, on, reason", [
    ("auto", "bfloat16", "cpu", True, "bfloat16 on CPU"),
    ("auto", "float32", "cpu", False, "float32 on CPU: no gain measured"),
    ("auto", "bfloat16", "gpu", False, "computes on GPU, not on CPU"),
    ("auto", "bfloat16", "tpu", False, "computes on TPU, not on CPU"),
    ("on", "float32", "cpu", True, "set by hparams"),
    ("off", "bfloat16", "cpu", False, "set by hparams"),
])
def test_choice(setting, dtype, device, on, reason):
  assert xla_fusion.choose(setting, dtype, device) == (on, reason)


def test_environment_gets_the_flags_unless_the_user_chose_them():
  environ = {}
  xla_fusion.prepare_environment(environ)
  assert environ["TF_XLA_FLAGS"] == _ON and xla_fusion.available(environ)
  environ = {"TF_XLA_FLAGS": "--xla_dump_to=/tmp/x"}
  xla_fusion.prepare_environment(environ)
  assert environ["TF_XLA_FLAGS"] == "--xla_dump_to=/tmp/x " + _ON
  environ = {"TF_XLA_FLAGS": "--tf_xla_ops_to_cluster=MatMul"}
  xla_fusion.prepare_environment(environ)
  assert environ["TF_XLA_FLAGS"] == "--tf_xla_ops_to_cluster=MatMul"
  assert not xla_fusion.available(environ)
  assert not xla_fusion.available({})


def test_on_without_the_start_up_flags_is_off_and_says_why(monkeypatch):
  monkeypatch.setenv("TF_XLA_FLAGS", "--xla_dump_to=/tmp/x")
  on, reason = xla_fusion.apply("on", "bfloat16", "cpu")
  assert not on and reason.startswith("not applied: TF_XLA_FLAGS")
  assert "--tf_xla_cpu_global_jit" in reason
  lines = []
  config = pretrain_fixtures.tiny_config(fuse_elementwise="on")
  assert not xla_fusion.resolve(configure_specs.RuntimeSpec.from_config(
      config), log=lines.append, device="cpu")
  assert lines == ["fuse_elementwise on -> off (%s)" % reason]
  assert xla_fusion.apply("off", "bfloat16", "cpu") == (False,
                                                        "set by hparams")


def test_default_is_auto_and_unknown_values_are_refused():
  assert configure.PRETRAIN_FIELDS["fuse_elementwise"].default == "auto"
  assert configure.FINETUNE_FIELDS["fuse_elementwise"].default == "auto"
  with pytest.raises(ConfigError, match="fuse_elementwise"):
    pretrain_fixtures.tiny_config(fuse_elementwise="yes")


def test_bfloat16_pretraining_turns_it_on(tmp_path):
  _, proc = pretrain_fixtures.run_tiny_pretraining(
      tmp_path, "bf16", mixed_precision="bfloat16")
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert ("fuse_elementwise auto -> on (bfloat16 on CPU): XLA fuses "
          "elementwise ops, matmuls stay with oneDNN") in proc.stdout
  assert "Eval at step 2" in proc.stdout or "step 2/2" in proc.stdout


def _scoped_graph_ops(monkeypatch, clustering):
  """{op type: its _XlaCompile attr or None} of a graph built in
  `outside_clusters`, with auto-clustering on or off."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(xla_fusion, "is_on", lambda: clustering)

  def build(x):
    with xla_fusion.outside_clusters():
      return tf.reduce_max(x, axis=-1)

  graph = tf.function(build).get_concrete_function(
      tf.TensorSpec([2, 3], tf.float32)).graph
  found = {}
  for op in graph.get_operations():
    try:
      found[op.type] = op.get_attr("_XlaCompile")
    except ValueError:
      found[op.type] = None
  return found


def test_outside_clusters_marks_ops_only_under_auto_clustering(monkeypatch):
  assert _scoped_graph_ops(monkeypatch, True)["Max"] is False
  assert _scoped_graph_ops(monkeypatch, False)["Max"] is None
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(xla_fusion, "is_on", lambda: True)
  with xla_fusion.outside_clusters():  # eager: Keras builds models so
    assert float(tf.reduce_max(tf.constant([1.0, 2.0]))) == 2.0
