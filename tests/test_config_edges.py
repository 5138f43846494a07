"""Config at the edges: few modules below the entry scripts take the whole
config (issue 51); the rest receive the specs of configure_specs.py and
configure_finetuning_specs.py.

The rule, read with `ast` (nothing is imported): a module takes the whole
config when a function or method in it has a parameter named `config` (or
ending in `_config`) and reads a config attribute from it (a field of
`PretrainingConfig` or `FinetuningConfig`, or one of the attributes and
methods the config objects add: `model_dir`, `network_hparams`,
`to_dict`, ...), passes it on to a call, or keeps it (`self.config =
config`). A `config` that is only indexed or `.get`-read (a JSON dict, an
HF config.json) does not count. A config under another name is not seen:
the names are the project's convention, and a review keeps them.

Entry scripts (run_*.py, build_*.py, export_model.py, study.py),
configure.py and the two specs modules, tests/ and bench/ (scripts of their
own) are not counted. The bound is the count when the rule was written, to
be lowered as modules move to specs; it may only go down.
"""

import ast
import dataclasses
import os

import pytest

import configure
import configure_specs
from tests import paths
from tests import pretrain_fixtures

MAX_MODULES = 4
SKIPPED_DIRS = {"tests", "bench", "__pycache__", "runs", "work"}
EDGE_MODULES = {"configure.py", "configure_specs.py",
                "configure_finetuning_specs.py", "export_model.py",
                "study.py"}
CONFIG_ATTRIBUTES = (set(configure.PRETRAIN_FIELDS) |
                     set(configure.FINETUNE_FIELDS) |
                     {"model_name", "data_dir", "model_dir", "user_hparams",
                      "model_hparams", "generator_hparams", "network_hparams",
                      "to_dict", "save", "adopted_from",
                      "mixed_precision_auto", "train_shards"})

# Modules whose `config` is something else, with what it is.
NOT_CONFIGS = {
    os.path.join("studies", "released.py"): "an HF folder's config.json "
                                            "dict",
}


def _is_edge(relative):
  name = os.path.basename(relative)
  return os.sep not in relative and (
      name in EDGE_MODULES or name.startswith(("run_", "build_")))


def _python_files():
  for root, dirs, files in os.walk(paths.REPO):
    dirs[:] = sorted(d for d in dirs
                     if d not in SKIPPED_DIRS and not d.startswith("."))
    for name in sorted(files):
      relative = os.path.relpath(os.path.join(root, name), paths.REPO)
      if (name.endswith(".py") and not _is_edge(relative) and
          relative not in NOT_CONFIGS):
        yield relative


def _is_config(node):
  """Whether `node` names a config: `config`, `x_config`, `self.config`,
  `task.config`, ..."""
  name = (node.id if isinstance(node, ast.Name) else
          node.attr if isinstance(node, ast.Attribute) else "")
  return name == "config" or (name.endswith("_config") and
                              not name.startswith("_"))


def _uses_whole(node):
  """Whether `node` reads a config attribute, passes a config on or keeps
  it."""
  if isinstance(node, ast.Attribute):
    return node.attr in CONFIG_ATTRIBUTES and _is_config(node.value)
  if isinstance(node, ast.Call):
    return any(_is_config(a) for a in node.args + [
        k.value for k in node.keywords if k.arg is not None])
  if isinstance(node, ast.Assign):
    return _is_config(node.value) and any(
        isinstance(t, ast.Attribute) for t in node.targets)
  return False


def _nodes(tree):
  """The nodes of `tree` outside calls of Keras' `from_config` (whose
  config is a dict of a layer's arguments)."""
  for node in ast.iter_child_nodes(tree):
    if isinstance(node, ast.Call) and isinstance(
        node.func, ast.Attribute) and node.func.attr == "from_config":
      continue
    yield node
    yield from _nodes(node)


def takes_whole_config(source):
  """Whether a module's source reads, passes on or keeps a whole config."""
  return any(_uses_whole(node) for node in _nodes(ast.parse(source)))


def modules_taking_config():
  found = []
  for relative in _python_files():
    with open(os.path.join(paths.REPO, relative), encoding="utf-8") as f:
      if takes_whole_config(f.read()):
        found.append(relative)
  return found


def test_the_rule_sees_a_config_and_not_a_dict():
  assert takes_whole_config("def f(config):\n  return config.seed\n")
  assert takes_whole_config("def f(config):\n  return g(config)\n")
  assert takes_whole_config(
      "class T:\n  def __init__(self, config):\n    self.config = config\n")
  assert not takes_whole_config("def f(config):\n  return config['seed']\n")
  assert not takes_whole_config("def f(spec):\n  return spec.seed\n")


def test_few_modules_take_the_whole_config():
  found = modules_taking_config()
  assert len(found) <= MAX_MODULES, (
      "%d modules take the whole config (at most %d); hand them the specs "
      "of configure_specs.py instead:\n%s" % (len(found), MAX_MODULES,
                                             "\n".join(found)))


def test_specs_are_frozen_views_of_the_config():
  config = pretrain_fixtures.tiny_config(mixed_precision="float16",
                                         temperature_decay_steps=0)
  specs = configure_specs.pretraining_specs(config)
  assert specs.network.network_hparams("generator") == (
      config.network_hparams("generator"))
  assert specs.network.network_hparams() == config.network_hparams()
  assert specs.objective.temperature_decay_steps == config.num_train_steps
  assert specs.optimization.loss_scale == config.initial_loss_scale
  assert specs.masking.max_predictions_per_seq == (
      config.max_predictions_per_seq)
  with pytest.raises(dataclasses.FrozenInstanceError):
    specs.runtime.seed = 1
  with pytest.raises(TypeError):
    specs.network.discriminator["hidden_size"] = 1
  assert config.model_hparams["hidden_size"] != 1
