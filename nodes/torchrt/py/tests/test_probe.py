"""probe: the weight-decay search's ties, as gatepipe's searchWD."""
import unittest

from gatepipe_worker.probe import beats, search_rounds


def search(score, coarse=(0, 16, 32, 48, 64, 80, 96), nwd=97):
    gen = search_rounds(list(coarse), nwd)
    ask = gen.send(None)
    while True:
        try:
            ask = gen.send({i: score(i) for i in ask})
        except StopIteration as stop:
            return stop.value


class SearchTest(unittest.TestCase):
    def test_peak_as_searchWD(self):
        peak, best = search(lambda i: 100 - abs(i - 37))
        self.assertEqual((peak, best), (37, 100))

    def test_rounding_is_a_tie(self):
        base = 72.22222222222221
        for gain, want in ((1e-14, 0), (1e-6, 16)):
            peak, _ = search(lambda i: base if i == 0 else base * (1 + gain) if i == 16 else 10.0)
            self.assertEqual(peak, want, gain)

    def test_beats(self):
        self.assertTrue(beats(0.5, 0.0))
        self.assertFalse(beats(1.0 + 1e-12, 1.0))
        self.assertTrue(beats(0.0, -1.0))


if __name__ == "__main__":
    unittest.main()
