"""Evaluation and benchmarks: the replay A/B, the live A/B, ``eval`` and ``bench``.

This package sits on top of the library and imports it as any user would; the library never imports it
(``import offline_compress`` loads none of it). Its scoring code has its own parsers and never imports the
extractor, so a score cannot be a re-check of the code under test.
"""
