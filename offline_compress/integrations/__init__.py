"""Adapters that plug the compaction hook into agent frameworks. Each lives in its own module and imports its
framework only when that module is imported (install the framework through the matching extra, e.g.
``pip install "offline_compress[agents]"`` for mini-swe-agent); ``import offline_compress`` loads none of them."""
