"""Models: generator, discriminator and the pre-trainer that receives them.

`model/builders.py` assembles them from a config.
"""
