"""Networks: the ELECTRA encoder (encoder.py), built from model/layers/."""
