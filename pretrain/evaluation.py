"""Pre-training evaluation: ELECTRA's metrics and analyses (docs/method.md §13).

Runs `num_eval_steps` batches of the eval shards through the model without
dropout, drawing replacements from the configured sampler with no warm-up
(`sampling_warmup_steps` only concerns training); in HP modes the same
batches are scored a second time with replacements from p_G, for the
hardness comparison (D's accuracy under p_G versus p_S). Replacements are
drawn at the temperature of the evaluated step (the replacement curriculum,
model/temperature_schedule.py); unless that is already plain ELECTRA's draw
(p_G at temperature 1), the same batches are scored once more on draws from
p_G at temperature 1, reported with the suffix `_t1` (`disc_auc_t1`, D's
losses on replaced and original tokens), so that an AUC on easy draws never
passes for a D that uses context. D's accuracies are filed under the
distribution drawn from (`Sampler.drawn_from`: pG, pS or uniform). D's
encoder also reads the real text of each batch: how spread out its states
are (`disc_state_cosine`, `disc_state_rank`; util/state_geometry.py) says
whether D is collapsing, which makes a start worse than random
initialisation for fine-tuning (docs/performance.md). The
estimator's correlations are taken in log space (`est_log_disc_loss`,
`actual_log_disc_loss`). Results go to `<model_dir>/results/` as JSON and
text, the generator's max-probability histogram as a PNG.
"""

import os

import tensorflow as tf

from model import samplers
from pretrain import eval_metrics
from pretrain import eval_report
from pretrain import pretrain_data

# Model outputs and features the accumulator reads. `mlm_loss_per_pos` is
# the cross-entropy for every focal_gamma (`masked_lm_loss`, comparable
# across runs); runs with focal_gamma > 0 also report their focal loss.
_OUTPUT_KEYS = ("masked_lm_preds", "mlm_loss_per_pos", "gen_max_prob",
                "sampled_tokens", "disc_probs", "disc_labels",
                "disc_loss_per_token", "masked_position_mask")
_FOCAL_KEY = "mlm_focal_loss_per_pos"
_FEATURE_KEYS = ("masked_lm_ids", "masked_lm_weights", "input_mask",
                 "input_ids")
# The estimator's pair (log space, docs/method.md §13.2), in HP modes.
_ESTIMATOR_KEYS = ("est_log_disc_loss", "actual_log_disc_loss")
# D on temperature-1 draws from p_G (suffix `_t1`).
_T1_KEYS = ("disc_probs", "disc_labels", "disc_loss_per_token",
            "sampled_tokens")
_T1_METRICS = ("disc_auc", "disc_loss_replaced", "disc_loss_original",
               "replacement_log10_rank", "original_log10_rank")
# What the temperature-1 pass's accumulator also reads of the batch.
_T1_FEATURES = ("input_mask", "input_ids", "masked_lm_ids",
                "masked_lm_weights")


def _disc_correct(out):
  predicted = tf.cast(out["disc_probs"] > 0.5, tf.int32)
  return tf.cast(tf.equal(predicted, out["disc_labels"]), tf.int32)


def draws_plain_electra(model):
  """Whether `model`'s evaluation draws are p_G at temperature 1 at every
  step, so that a second pass on such draws would repeat the first."""
  return (isinstance(model.sampler, samplers.GeneratorSampler) and
          model.temperature_at.constant and model.temperature_at(0) == 1.0)


def make_eval_step(model, strategy, report_focal_loss=False):
  """A `tf.function` running one eval batch of `strategy` through
  pre-trainer `model`; build once and reuse it. `report_focal_loss` adds
  the focal MLM loss per position (runs with focal_gamma > 0). Call it as
  `eval_step(iterator, step)`, `step` the evaluated global step (a scalar
  tensor; it sets the temperature of the draws)."""
  sampler = model.sampler
  output_keys = _OUTPUT_KEYS + ((_FOCAL_KEY,) if report_focal_loss else ())
  score_t1 = not draws_plain_electra(model)

  def replica_fn(features, step):
    # The model's own sampler named explicitly: no warm-up
    # (docs/method.md §5, §13).
    out = model(features, training=False, step=step, sampler=sampler)
    batch = {k: out[k] for k in output_keys if k in out}
    batch.update({k: features[k] for k in _FEATURE_KEYS})
    # D's states of the real text, as fine-tuning will see it.
    batch["disc_states"] = tf.cast(model.discriminator.encoder(
        {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")},
        training=False), tf.float32)
    if "disc_probs" not in out:
      return batch
    batch["disc_correct_" + sampler.drawn_from] = _disc_correct(out)
    if score_t1:
      plain = model(features, training=False, step=step,
                    sampler=samplers.GeneratorSampler(), temperature=1.0)
      batch.update({k + "_t1": plain[k] for k in _T1_KEYS})
    if model.learns_sampler:
      batch.update({k: out[k] for k in _ESTIMATOR_KEYS})
      under_pg = model(features, training=False, step=step,
                       sampler=samplers.GeneratorSampler())
      batch["disc_correct_pG"] = _disc_correct(under_pg)
      # The estimator on p_G draws, free of p_S's selection of tokens whose
      # loss the head overestimates (a bias strongest early in training).
      batch.update({k + "_pG": under_pg[k] for k in _ESTIMATOR_KEYS})
    return batch

  # No autograph below: nothing branches on a tensor, and converting
  # every Keras layer costs seconds (docs/performance.md, "Start-up").
  @tf.function(autograph=False)
  def eval_step(iterator, step=0):
    return strategy.run(replica_fn, args=(next(iterator), step))

  return eval_step


def split_t1(batch):
  """(batch, t1_batch): an eval step's numpy outputs without D's outputs
  on temperature-1 draws, and those as a batch of their own (None when the
  step made no such pass)."""
  if _T1_KEYS[0] + "_t1" not in batch:
    return batch, None
  batch = dict(batch)
  t1_batch = {k: batch.pop(k + "_t1") for k in _T1_KEYS}
  t1_batch.update({k: batch[k] for k in _T1_FEATURES})
  return batch, t1_batch


def split_pg_estimator(batch):
  """(batch, pg_batch): an eval step's numpy outputs without the estimator
  pair on p_G draws, and that pair as a batch of its own for a second
  `PretrainEvalAccumulator` (None outside HP modes)."""
  if _ESTIMATOR_KEYS[0] + "_pG" not in batch:
    return batch, None
  batch = dict(batch)
  pg_batch = {k: batch.pop(k + "_pG") for k in _ESTIMATOR_KEYS}
  pg_batch["masked_lm_weights"] = batch["masked_lm_weights"]
  return batch, pg_batch


def evaluate(specs, model, strategy, step, log=print, eval_step=None,
             writer=None):
  """Evaluates `model`; writes and returns the results dict.

  Args:
    specs: the run's configure_specs.PretrainingSpecs; read are its `run`
      (model_name, model_dir, num_eval_steps), `data` and `masking` (the
      held-out shards: pretrain_data.get_input_fn) and `objective`
      (sampling, focal_gamma).
    model, strategy: the ElectraPretrainer and its tf.distribute strategy.
    step: the step trained, which the results are written under.
    log: where the results line goes.
    eval_step: the step of `make_eval_step`; pass it when evaluating
      repeatedly (as `eval_every` does), so that the step is traced once,
      not on every call.
    writer: the chief's TensorBoard writer of `<model_dir>/eval`
      (`eval_writer`), made once per run so that one events file holds
      its curves; None on the other workers, which write nothing.
  """
  run, objective = specs.run, specs.objective
  input_fn = pretrain_data.get_input_fn(specs.data, specs.masking,
                                        is_training=False)
  iterator = iter(strategy.distribute_datasets_from_function(input_fn))
  if eval_step is None:
    eval_step = make_eval_step(model, strategy, bool(objective.focal_gamma))
  accumulator = eval_metrics.PretrainEvalAccumulator()
  under_pg = eval_metrics.PretrainEvalAccumulator()
  under_t1 = eval_metrics.PretrainEvalAccumulator()
  step_tensor = tf.constant(step, tf.int64)
  with input_fn.data_errors():
    for _ in range(run.num_eval_steps):
      outputs = eval_step(iterator, step_tensor)
      # The global batch, from the replicas of all workers.
      batch = {k: strategy.gather(v, axis=0).numpy()
               for k, v in outputs.items()}
      batch, pg_batch = split_pg_estimator(batch)
      if pg_batch:
        under_pg.update(pg_batch)
      batch, t1_batch = split_t1(batch)
      if t1_batch:
        under_t1.update(t1_batch)
      accumulator.update(batch)
  results = accumulator.result()
  pg = under_pg.result()
  if pg.get("estimator_pearson") is not None:
    results["estimator_spearman_pG"] = pg["estimator_spearman"]
    results["estimator_pearson_pG"] = pg["estimator_pearson"]
  results.update(t1_metrics(results, under_t1.result()))
  results["temperature"] = model.temperature_at.value_at(step)
  results.update(model_name=run.model_name, sampling=objective.sampling,
                 focal_gamma=objective.focal_gamma,
                 eval_tfrecords=specs.data.eval_tfrecords,
                 num_eval_steps=run.num_eval_steps)
  if strategy.extended.should_checkpoint:
    # Only the chief of a multi-worker cluster writes.
    _write_results(results, run, step, log, writer)
  return results


def eval_writer(model_dir):
  """The TensorBoard writer of an evaluation's curves, `<model_dir>/eval`."""
  return tf.summary.create_file_writer(os.path.join(model_dir, "eval"))


def _write_results(results, run, step, log, writer):
  """Writes an evaluation's `results` at `step` under the RunSpec's model
  directory (results files, history, TensorBoard scalars, the histogram
  plot) and logs them."""
  results_dir = os.path.join(run.model_dir, "results")
  paths = eval_report.write_results(results, results_dir, step=step)
  eval_report.append_history(results, results_dir, step)
  _write_scalars(results, writer, step)
  plot = eval_report.plot_max_prob_histogram(
      {run.model_name: results["gen_max_prob_histogram"]},
      os.path.join(results_dir, "gen_max_prob_histogram.png"),
      title="Generator max-probability at masked positions (step %d)" % step)
  log("Eval at step %d: %s" % (step, ", ".join(
      "%s %.4f" % (k, results[k]) for k in eval_metrics.CURVE_METRICS +
      ("estimator_spearman_pG", "estimator_pearson_pG")
      if isinstance(results.get(k), float))))
  warning = eval_report.discriminator_warning(results)
  if warning:
    log(warning)
  log("Results: %s, %s; histogram: %s" % (paths["json"], paths["txt"], plot))


def _write_scalars(results, writer, step):
  """The curves' metrics at `step`, to TensorBoard through `writer`
  (flushed, so the curve is on disk)."""
  with writer.as_default(step=step):
    for key in eval_metrics.CURVE_METRICS:
      if isinstance(results.get(key), float):
        tf.summary.scalar(key, results[key])
  writer.flush()


def t1_metrics(results, t1_results):
  """D's metrics on temperature-1 draws from p_G, suffixed `_t1`: those of
  the second pass `t1_results`, or, when the draws already were plain
  ELECTRA's (no second pass, `t1_results` empty), of `results`."""
  source = t1_results if t1_results else results
  return {k + "_t1": source[k] for k in _T1_METRICS if k in source}
