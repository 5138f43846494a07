"""Fine-tuning of the pre-trained discriminator: GLUE, SQuAD and tagging tasks.

`task.Task` is the base class, `task_builder` the registry of task names,
`trainer.Trainer` one trial's training loop, `runner.run_finetuning` the whole
run (`run_finetuning.py` at the repository root is its command line).
"""
