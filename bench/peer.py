"""tf-models-official's ELECTRA at our shapes, for bench/compare_peer.py.

`official.nlp.modeling.models.ElectraPretrainer` over two
`official.nlp.modeling.networks.BertEncoder`s, built as tf-models-official's
own ELECTRA task builds it (`official/nlp/tasks/electra_task.py`: the
generator reuses the discriminator's word embeddings, but keeps its own
position and token-type embeddings, unlike ours; dict outputs), with the
generator and discriminator shapes of one of our `PretrainingConfig`s. Its
loss is that task's: mean masked-LM cross-entropy plus `disc_weight` times
the mean replaced-token-detection loss over real tokens. One change: its
masked-LM head computes in float32 (see `PeerModel`).

The peer samples replacements from p_G (ELECTRA's "mlm" mode), so its FLOPs
are `pretrain/flops.py`'s count of the same config with `sampling: "mlm"`.
"""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling import models
from official.nlp.modeling import networks


def _encoder(hparams, seq_len, embedding_layer=None):
  initializer = tf_keras.initializers.TruncatedNormal(
      stddev=hparams["initializer_range"])
  return networks.BertEncoder(
      vocab_size=hparams["vocab_size"], hidden_size=hparams["hidden_size"],
      num_layers=hparams["num_hidden_layers"],
      num_attention_heads=hparams["num_attention_heads"],
      max_sequence_length=max(seq_len, hparams["max_position_embeddings"]),
      type_vocab_size=hparams["type_vocab_size"],
      inner_dim=hparams["intermediate_size"],
      inner_activation=tf_utils.get_activation(hparams["hidden_act"]),
      output_dropout=hparams["hidden_dropout_prob"],
      attention_dropout=hparams["attention_probs_dropout_prob"],
      initializer=initializer, embedding_width=hparams["embedding_size"],
      embedding_layer=embedding_layer, dict_outputs=True)


def peer_inputs(features):
  """Our batch dict (bench/batches.py, pretrain/pretrain_data.py) -> the
  peer's input dict (the same tensors under its names)."""
  return dict(input_word_ids=features["masked_input_ids"],
              input_mask=features["input_mask"],
              input_type_ids=features["segment_ids"],
              masked_lm_positions=features["masked_lm_positions"],
              masked_lm_ids=features["masked_lm_ids"])


class PeerModel(object):
  """The peer pretrainer and its loss, for `config`'s shapes.

  Args:
    config: a configure.PretrainingConfig (model_hparams, generator_hparams,
      max_seq_length, max_predictions_per_seq, disc_weight, gen_weight).

  Attributes:
    model: the `ElectraPretrainer` (its heads' variables are made on the
      first call).
  """

  def __init__(self, config):
    self.config = config
    seq_len = config.max_seq_length
    discriminator = _encoder(config.network_hparams("discriminator"), seq_len)
    gen = config.network_hparams("generator")
    generator = _encoder(gen, seq_len,
                         embedding_layer=discriminator.get_embedding_layer())
    self.model = models.ElectraPretrainer(
        generator_network=generator, discriminator_network=discriminator,
        vocab_size=gen["vocab_size"], num_classes=2,
        num_token_predictions=config.max_predictions_per_seq,
        mlm_activation=tf_utils.get_activation(gen["hidden_act"]),
        mlm_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=gen["initializer_range"]),
        disallow_correct=config.disallow_correct)
    # Under a mixed policy the stock head gives bfloat16/float16 logits, and
    # the pretrainer's sampler adds float32 Gumbel noise to them (a dtype
    # error). Its head runs in float32 here, as ours does
    # (model/layers/vocabulary_head.py).
    self.model.masked_lm = layers.MaskedLM(
        embedding_table=generator.get_embedding_table(),
        activation=tf_utils.get_activation(gen["hidden_act"]),
        initializer=tf_keras.initializers.TruncatedNormal(
            stddev=gen["initializer_range"]),
        output="logits", name="generator_masked_lm", dtype=tf.float32)

  def loss(self, features):
    """The training loss (float32 scalar) of one batch, as the official
    ELECTRA task's `build_losses` computes it (no next-sentence loss)."""
    out = self.model(peer_inputs(features))
    lm = tf_keras.losses.sparse_categorical_crossentropy(
        features["masked_lm_ids"], tf.cast(out["lm_outputs"], tf.float32),
        from_logits=True)
    weights = features["masked_lm_weights"]
    mlm_loss = tf.math.divide_no_nan(tf.reduce_sum(lm * weights),
                                     tf.reduce_sum(weights))
    mask = tf.cast(features["input_mask"], tf.float32)
    rtd = tf.nn.sigmoid_cross_entropy_with_logits(
        logits=tf.cast(out["disc_logits"], tf.float32),
        labels=tf.cast(out["disc_label"], tf.float32))
    rtd_loss = tf.math.divide_no_nan(tf.reduce_sum(rtd * mask),
                                     tf.reduce_sum(mask))
    return self.config.gen_weight * mlm_loss + self.config.disc_weight * (
        rtd_loss)
