"""Keras layers of the ELECTRA transformer and its prediction heads.

  * `ElectraEmbeddings` (embeddings.py): token + position + segment tables.
  * `BiasedSelfAttention` (attention.py): attention with an additive bias.
  * `VocabularyHead` (vocabulary_head.py): MLM and sampling heads.
  * `ReplacedTokenHead` (replaced_token_head.py): the discriminator's head.
  * `CounterDropout` (dropout.py): dropout with a hashed mask.
  * `EinsumDense`, `add_bias` (dense.py): bias adds whose gradient
    TensorFlow's kernel sums under XLA auto-clustering.
"""
