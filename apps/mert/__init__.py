"""MERT (ICLR 2024): music understanding on the official MERT-v1-95M encoder and the Music-Descriptor probing heads.

Not registered yet (no ``DEMO`` here, so the hub does not list it): this package holds the parts built so far, the
audio reader (audio.py) and the official encoder and heads (model.py), tested on tiny checkpoints in the official
layouts (tests/fixtures/tiny_mert.py). Issue #27 tracks the rest.
"""
