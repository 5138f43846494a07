"""The registry of fine-tuning tasks: task name -> `Task` subclass, and the
tasks described by a task.json in `<data_dir>/finetuning_data/<name>/`."""

from finetune import custom_tasks
from finetune import task_spec
from finetune.classification import classification_tasks
from finetune.qa import qa_tasks
from finetune.tagging import tagging_tasks
from util.errors import UserError

TASKS = {}


def register(task_class):
  """Adds a `Task` subclass under its `name` (usable as a class decorator)."""
  if task_class.name in TASKS and TASKS[task_class.name] is not task_class:
    raise ValueError("task name %r registered twice" % task_class.name)
  TASKS[task_class.name] = task_class
  return task_class


for _task_class in (classification_tasks.GLUE_TASKS + qa_tasks.QA_TASKS +
                    tagging_tasks.TAGGING_TASKS):
  register(_task_class)


def check_task_names(names, data_dir=None):
  """UserError listing the valid names if any of `names` is unknown.

  With `data_dir`, a name that is no built-in task is valid when
  `<data_dir>/finetuning_data/<name>/task.json` exists (see
  `finetune.custom_tasks`).
  """
  unknown = [name for name in names if name not in TASKS and
             not task_spec.has_task_json(data_dir, name)]
  if unknown:
    raise UserError(task_spec.unknown_task_message(unknown, TASKS,
                                                      data_dir))


def get_task(settings, name, tokenizer):
  """The task called `name`, built for `settings` (a
  configure_finetuning_specs.FinetuningTaskSpec): a built-in task, or the
  one described by `<settings.data_dir>/finetuning_data/<name>/task.json`."""
  check_task_names([name], settings.data_dir)
  if name in TASKS:
    if task_spec.has_task_json(settings.data_dir, name):
      raise UserError("%s: %r is a built-in task, which reads its files "
                      "without a task.json; to describe your own task, put "
                      "its files and task.json in a directory with another "
                      "name." % (task_spec.task_json_path(settings.data_dir,
                                                             name), name))
    return TASKS[name](settings, tokenizer)
  return custom_tasks.build_task(settings, name, tokenizer)
