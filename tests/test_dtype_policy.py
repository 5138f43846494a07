"""hparam mixed_precision "auto" (util/dtype_policy.py): every branch of the
choice from given facts, the probe's reading of /proc/cpuinfo, and a tiny
run_pretraining.py run with "auto" (its start-up line, its config.json)."""

import json
import os

import pytest

import configure
from tests import pretrain_fixtures
from util import dtype_policy
from util.hparams import ConfigError

_NO_BF16 = {"fpu", "avx2", "avx512f", "avx512bw"}


def _facts(cpu=frozenset(_NO_BF16), gpus=(), tpu=False, system="Linux"):
  return dtype_policy.Facts(None if cpu is None else set(cpu), list(gpus),
                            tpu, system)


@pytest.mark.parametrize("facts, dtype, reason", [
    (_facts(), "float32", "CPU has no avx512_bf16/amx_bf16"),
    (_facts(_NO_BF16 | {"avx512_bf16"}), "bfloat16", "CPU has avx512_bf16"),
    (_facts(_NO_BF16 | {"amx_bf16", "amx_tile"}), "bfloat16",
     "CPU has amx_bf16"),
    (_facts(_NO_BF16 | {"avx512_bf16", "amx_bf16"}), "bfloat16",
     "CPU has avx512_bf16+amx_bf16"),
    (_facts(None, system="Darwin"), "float32",
     "CPU bfloat16 support is only detected on Linux (/proc/cpuinfo), not "
     "on Darwin"),
    # A GPU decides, whatever the CPU has.
    (_facts(_NO_BF16, gpus=[(8, 0)]), "bfloat16",
     "GPU compute capability 8.0 >= 8.0"),
    (_facts(_NO_BF16, gpus=[(9, 0), (8, 6)]), "bfloat16",
     "GPU compute capability 8.6 >= 8.0"),
    (_facts(_NO_BF16 | {"avx512_bf16"}, gpus=[(7, 5)]), "float32",
     "GPU compute capability 7.5 < 8.0: no native bfloat16"),
    (_facts(gpus=[(8, 0), (7, 0)]), "float32",
     "GPU compute capability 7.0 < 8.0: no native bfloat16"),
    (_facts(gpus=[None]), "float32", "a GPU reports no compute capability"),
    (_facts(tpu=True), "bfloat16", "TPU: native bfloat16"),
])
def test_choice_from_the_facts(facts, dtype, reason):
  assert dtype_policy.choose(facts) == (dtype, reason)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
  cpuinfo = tmp_path / "cpuinfo"
  cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512_bf16 sse\n\n"
                     "processor\t: 1\nflags\t\t: fpu\n")
  assert dtype_policy.cpu_flags(str(cpuinfo)) == {"fpu", "avx512_bf16",
                                                  "sse"}
  cpuinfo.write_text("processor\t: 0\n")
  assert dtype_policy.cpu_flags(str(cpuinfo)) == set()
  assert dtype_policy.cpu_flags(str(tmp_path / "missing")) is None


def test_probe_reports_this_machine():
  facts = dtype_policy.probe("tpu")
  assert facts.tpu and facts.system
  if facts.system == "Linux":
    assert isinstance(facts.cpu_flags, set) and facts.cpu_flags
  assert not dtype_policy.probe("default").tpu


def test_resolve_replaces_only_auto_and_records_why():
  lines = []
  auto = pretrain_fixtures.tiny_config(mixed_precision="auto")
  config = configure.resolve_precision(
      auto, lines.append, _facts(_NO_BF16 | {"amx_bf16"}))
  assert config.mixed_precision == "bfloat16"
  assert auto.mixed_precision == "auto"  # A new config; this one is kept.
  assert config.user_hparams == auto.user_hparams
  assert lines == ["mixed_precision auto -> bfloat16 (CPU has amx_bf16)"]
  saved = config.to_dict()
  assert saved["mixed_precision"] == "bfloat16"
  assert saved["mixed_precision_auto"] == dict(resolved="bfloat16",
                                               reason="CPU has amx_bf16")
  explicit = pretrain_fixtures.tiny_config(mixed_precision="float32")
  assert dtype_policy.resolve("float32", "tpu", lines.append,
                              _facts(tpu=True)) is None
  assert configure.resolve_precision(explicit, lines.append,
                                     _facts(tpu=True)) is explicit
  assert len(lines) == 1 and "mixed_precision_auto" not in explicit.to_dict()


def test_a_config_is_not_changed_once_built():
  config = pretrain_fixtures.tiny_config()
  with pytest.raises(AttributeError, match="not changed once built"):
    config.mixed_precision = "bfloat16"
  with pytest.raises(TypeError, match="not facts"):
    config.with_facts(seed=1)


def test_default_stays_float32_and_unknown_values_are_refused():
  assert configure.PRETRAIN_FIELDS["mixed_precision"].default == "float32"
  assert configure.FINETUNE_FIELDS["mixed_precision"].default == "float32"
  with pytest.raises(ConfigError, match="mixed_precision"):
    pretrain_fixtures.tiny_config(mixed_precision="bf16")


def test_pretraining_with_auto_says_what_it_picked_and_saves_it(tmp_path):
  data_dir, proc = pretrain_fixtures.run_tiny_pretraining(
      tmp_path, "auto", mixed_precision="auto")
  assert proc.returncode == 0, proc.stderr[-3000:]
  want = dtype_policy.choose(dtype_policy.probe("default"))
  line = "mixed_precision auto -> %s (%s)" % want
  assert proc.stdout.splitlines()[0] == line, proc.stdout[:2000]
  with open(os.path.join(data_dir, "models", "auto", "config.json")) as f:
    saved = json.load(f)
  assert saved["mixed_precision"] == want.mixed_precision
  assert saved["mixed_precision_auto"] == dict(
      resolved=want.mixed_precision, reason=want.reason)


def test_finetuning_with_auto_says_what_it_picked_and_saves_it(tmp_path,
                                                               capsys):
  import tf_keras  # pylint: disable=g-import-not-at-top
  from finetune import runner  # pylint: disable=g-import-not-at-top
  from tests import finetune_fixtures  # pylint: disable=g-import-not-at-top
  config = finetune_fixtures.tiny_config(model_dir=tmp_path, do_eval=False,
                                         mixed_precision="auto")
  try:
    runner.run_finetuning(config)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  want = dtype_policy.choose(dtype_policy.probe("default"))
  assert ("mixed_precision auto -> %s (%s)" % want in
          capsys.readouterr().out.splitlines())
  with open(os.path.join(str(tmp_path), "finetuning_models", "sst",
                         "config.json")) as f:
    saved = json.load(f)
  assert saved["mixed_precision"] == want.mixed_precision
  assert saved["mixed_precision_auto"]["reason"] == want.reason
