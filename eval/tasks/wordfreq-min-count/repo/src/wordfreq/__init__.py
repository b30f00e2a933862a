from .cli import count_words, main

__all__ = ["count_words", "main"]
