"""Token counting as the target model sees a history: its tokenizer (``gguf``: derived from a GGUF's own vocabulary,
or a ``tokenizer.json``), its chat template (``chat_template``: Gemma 3, or a Hugging Face folder's), and the exact,
incremental, cached counter (``counter.TokenCounter``, which counts a long text in pieces cut where no token can
span: ``pieces``). ``protocol.CountsTokens`` is what the rest of the library
asks of a counter, so a test or a caller may pass any object with those methods.

The counter is found at once and its tokenizer loads on first use, or in a background thread (``preload``, which a
hook starts), never at import; meanwhile a derived tokenizer's counts have an upper bound that needs none
(``TokenCounter.message_bounds``). ``counter.RunningTotal`` keeps a conversation's count as it grows."""
