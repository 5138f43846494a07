"""Typed hyperparameters: `Field`, the `HParams` config object, the checks
every config applies, and the `--hparams` parser. The fields themselves are
declared in configure_fields.py.

Bad hyperparameters raise `ConfigError` (a `UserError`: one paragraph, exit
code 2) naming the key, the expected type or range, and for an unknown key
the nearest valid one.
"""

import difflib
import json
import math
import os

from util import io_utils
from util.errors import UserError
from util.io_utils import write_json_atomic


class ConfigError(UserError):
  """A hyperparameter is unknown, mistyped, out of range or contradictory."""


class Field(object):
  """A hyperparameter: default value, accepted type(s), and what it means.

  Args:
    default: the value when neither a preset nor the user sets one.
    types: accepted Python type(s).
    doc: what it means (README's tables say the same).
    choices: the accepted values, if a closed set.
    min, max: the accepted range of a number (None: unbounded), inclusive
      unless `exclusive` names the end ("min", "max" or both). Checked on
      the final value, after presets and derivations; None always passes.
  """

  def __init__(self, default, types, doc, choices=None,
            min=None, max=None,  # pylint: disable=redefined-builtin
               exclusive=()):
    self.default = default
    self.types = types if isinstance(types, tuple) else (types,)
    self.doc = doc
    self.choices = choices
    self.min, self.max = min, max
    self.exclusive = (exclusive,) if isinstance(exclusive, str) else tuple(
        exclusive)

  def range_error(self, value):
    """A description of the range `value` falls outside, or None."""
    if value is None or (self.min is None and self.max is None):
      return None
    low_open, high_open = "min" in self.exclusive, "max" in self.exclusive
    below = self.min is not None and (value <= self.min if low_open
                                      else value < self.min)
    above = self.max is not None and (value >= self.max if high_open
                                      else value > self.max)
    if not (below or above):
      return None
    if self.max is None:
      return "%s %r" % (">" if low_open else ">=", self.min)
    if self.min is None:
      return "%s %r" % ("<" if high_open else "<=", self.max)
    return "in %s%r, %r%s" % ("(" if low_open else "[", self.min, self.max,
                              ")" if high_open else "]")


def _type_names(types):
  names = {int: "int", float: "float", bool: "bool", str: "string",
           dict: "object", list: "list", type(None): "null"}
  return " or ".join(names.get(t, t.__name__) for t in types)


def _non_finite(value):
  """The first NaN or infinite float in `value` (nested in objects and
  lists too), or None."""
  if isinstance(value, float):
    return None if math.isfinite(value) else value
  items = value.values() if isinstance(value, dict) else (
      value if isinstance(value, (list, tuple)) else ())
  for item in items:
    found = _non_finite(item)
    if found is not None:
      return found
  return None


def check_value(key, value, field):
  """ConfigError unless `value` has one of `field`'s types and choices, and
  holds no NaN or infinity (which every range check would let through)."""
  ok = any(isinstance(value, t) for t in field.types)
  # bool is an int in Python; a bool where a number is expected is a mistake.
  if isinstance(value, bool) and bool not in field.types:
    ok = False
  if not ok:
    raise ConfigError("hparam %r must be %s, got %s %r." % (
        key, _type_names(field.types), type(value).__name__, value))
  if (isinstance(value, int) and not isinstance(value, bool) and
      not -2**63 <= value < 2**63):
    raise ConfigError("hparam %r must fit a 64-bit integer, got %r." % (
        key, value))
  bad = _non_finite(value)
  if bad is not None:
    raise ConfigError("hparam %r must be a finite number, got %r." % (
        key, value if bad is value else bad))
  if field.choices and value not in field.choices:
    raise ConfigError("hparam %r must be one of %s, got %r." % (
        key, ", ".join(repr(c) for c in field.choices), value))


def unknown_key_error(key, valid, what="hparam"):
  """A ConfigError for `key`, naming the nearest of `valid` and all of them."""
  near = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.5)
  hint = (" Did you mean %r?" % near[0]) if near else ""
  return ConfigError("unknown %s %r.%s Valid keys: %s." % (
      what, key, hint, ", ".join(sorted(valid))))


class _DuplicateKeyError(Exception):
  """A JSON object names a key twice (args[0])."""


def _no_duplicate_keys(pairs):
  """json's object_pairs_hook: the object, or _DuplicateKeyError."""
  seen = {}
  for key, value in pairs:
    if key in seen:
      raise _DuplicateKeyError(key)
    seen[key] = value
  return seen


def load_hparams(hparams):
  """Parses `--hparams`: a JSON object string, a .json file's path, or None."""
  if hparams is None or hparams == "":
    return {}
  if isinstance(hparams, dict):
    return dict(hparams)
  text = hparams
  source = "--hparams"
  if not hparams.lstrip().startswith("{"):
    if not io_utils.exists(hparams):
      raise ConfigError("--hparams %r is neither a JSON object nor an "
                        "existing .json file." % hparams)
    if io_utils.is_dir(hparams):
      raise ConfigError("--hparams %s is a directory; give a .json file of "
                        "hyperparameters or a JSON object." % hparams)
    source = hparams
    try:
      text = io_utils.read_text(hparams)
    except (OSError, UnicodeDecodeError) as e:
      raise ConfigError("--hparams %s cannot be read as UTF-8 text: %s." % (
          hparams, e))
  try:
    parsed = json.loads(text, object_pairs_hook=_no_duplicate_keys)
  except _DuplicateKeyError as e:
    raise ConfigError("%s sets key %r twice; keep one (JSON would keep only "
                      "the last)." % (source, e.args[0]))
  except ValueError as e:
    raise ConfigError("%s is not valid JSON: %s." % (source, e))
  if not isinstance(parsed, dict):
    raise ConfigError("%s must hold a JSON object of hyperparameters, got %s."
                      % (source, type(parsed).__name__))
  return parsed


class HParams(object):
  """A config object: typed fields, presets, user values, checks, saving.

  Subclasses declare `FIELDS` ({name: Field}) and `FACTS` (names of what
  a run learns besides its hparams and records in config.json, e.g. what
  "auto" resolved to: given to the constructor by keyword, None by
  default), and may override `_presets` (values that depend on the user's,
  e.g. a model size's learning rate), `_derive` (fields computed from
  others), `_validate` (checks across fields; call the base's for the
  declared ranges) and `_derived_dict` (computed entries of `to_dict`).

  A config is not changed once built (setting an attribute raises
  AttributeError): a run that learns a fact builds another one
  (`with_facts`), and the parts of a run read the frozen specs made from
  it (configure_specs.py).

  Args:
    model_name, data_dir: the run's name and data directory.
    **kwargs: the user's hparams, and any of `FACTS`; unknown keys and
      wrong types raise ConfigError before anything else happens.
  """

  FIELDS = {}
  FACTS = ()

  def __init__(self, model_name, data_dir, **kwargs):
    self.model_name = model_name
    self.data_dir = data_dir
    for key in self.FACTS:
      setattr(self, key, kwargs.pop(key, None))
    self.check_user_values(kwargs)
    for key, field in self.FIELDS.items():
      default = field.default
      setattr(self, key, dict(default) if isinstance(default, dict) else
              list(default) if isinstance(default, list) else default)
    presets = self._presets(kwargs)
    for key, value in presets.items():
      if key not in kwargs:
        setattr(self, key, value)
    for key, value in kwargs.items():
      setattr(self, key, value)
    for key, field in self.FIELDS.items():
      if field.types == (float, int) and getattr(self, key) is not None:
        setattr(self, key, float(getattr(self, key)))
    self.user_hparams = dict(kwargs)
    self._derive()
    self._validate()
    self._built = True

  def __setattr__(self, name, value):
    if getattr(self, "_built", False):
      raise AttributeError(
          "config attribute %r: a config is not changed once built; build "
          "another (`with_facts`, or the constructor)." % name)
    object.__setattr__(self, name, value)

  def with_facts(self, **facts):
    """A new config of the same name, data directory and hparams, with
    `facts` (keys of `FACTS`) replacing this one's."""
    unknown = sorted(set(facts) - set(self.FACTS))
    if unknown:
      raise TypeError("not facts of %s: %s" % (type(self).__name__,
                                               ", ".join(unknown)))
    kept = {key: getattr(self, key) for key in self.FACTS}
    kept.update(facts)
    return type(self)(self.model_name, self.data_dir,
                      **dict(self.user_hparams, **kept))

  @classmethod
  def check_user_values(cls, kwargs):
    """Raises ConfigError for an unknown key or a value of the wrong type
    (the first checks of building a config; ranges and cross-field checks
    come after)."""
    for key in kwargs:
      if key not in cls.FIELDS:
        raise unknown_key_error(key, cls.FIELDS)
      check_value(key, kwargs[key], cls.FIELDS[key])

  def _presets(self, kwargs):
    return {}

  def _derive(self):
    pass

  def _validate(self):
    """The declared ranges, checked on the final values."""
    for key, field in self.FIELDS.items():
      value = getattr(self, key)
      error = field.range_error(value)
      if error:
        raise ConfigError("hparam %r must be %s, got %r." % (key, error,
                                                             value))

  def to_dict(self):
    d = {key: getattr(self, key) for key in self.FIELDS}
    d.update(model_name=self.model_name, data_dir=self.data_dir)
    d.update(self._derived_dict())
    return d

  def _derived_dict(self):
    return {}

  def save(self, path=None):
    """Atomically writes the effective config (by default to the model_dir)."""
    path = path or os.path.join(self.model_dir, "config.json")
    write_json_atomic(path, self.to_dict())
    return path

  def __repr__(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True)
