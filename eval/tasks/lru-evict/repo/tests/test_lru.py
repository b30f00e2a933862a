import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from cachekit import LRUCache  # noqa: E402


class LRUTest(unittest.TestCase):
    def test_capacity_is_kept(self):
        cache = LRUCache(2)
        for key in "abc":
            cache.put(key, key.upper())
        self.assertEqual(len(cache), 2)
        self.assertNotIn("a", cache)

    def test_get_marks_item_as_recently_used(self):
        cache = LRUCache(2)
        cache.put("a", 1)
        cache.put("b", 2)
        self.assertEqual(cache.get("a"), 1)
        cache.put("c", 3)
        self.assertIn("a", cache)
        self.assertNotIn("b", cache)

    def test_put_of_existing_key_marks_it_as_recently_used(self):
        cache = LRUCache(2)
        cache.put("a", 1)
        cache.put("b", 2)
        cache.put("a", 10)
        cache.put("c", 3)
        self.assertEqual(cache.get("a"), 10)
        self.assertNotIn("b", cache)

    def test_hit_and_miss_counts(self):
        cache = LRUCache(1)
        cache.put("a", 1)
        cache.get("a")
        cache.get("z")
        self.assertEqual((cache.hits, cache.misses), (1, 1))

    def test_bad_capacity(self):
        with self.assertRaises(ValueError):
            LRUCache(0)


if __name__ == "__main__":
    unittest.main()
