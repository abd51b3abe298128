"""The reading docs/results.md gives of the committed two-layer RoPE flip-flop model's blind distance
(examples/python/flipflop_circuit.py): the first layer at the read reaches the write's bit 6 bytes back; from 10
bytes on, the second layer's first head weighs most the byte 7 after the write (in every read at 10 and 32
bytes), where the first layer has gathered the write's bit; with the write 8 bytes back that relay is the byte
just before the read, which the head does not weigh, so neither path reaches the bit and the reads are at
chance."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
import flipflop_circuit  # noqa: E402


class BlindDistance(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = flipflop_circuit.readings(flipflop_circuit.DEFAULT, (6, 8, 10, 32), reads=100)

    def test_the_first_layer_reads_a_near_write_itself(self):
        six = self.r[6]
        self.assertLessEqual(six["errors"], 5)
        self.assertGreater(six["first_at_read"], 0.25)
        self.assertLess(self.r[8]["first_at_read"], 0.05)
        self.assertLess(self.r[10]["first_at_read"], 0.05)

    def test_the_second_layer_reads_a_relay_seven_bytes_after_the_write(self):
        for d in (10, 32):
            head = self.r[d]["heads"][0]
            self.assertEqual(self.r[d]["errors"], 0, d)
            self.assertEqual(head["relay"], 7, d)
            self.assertEqual(head["share"], 1.0, d)
            self.assertGreater(head["relay_holds"], 0.5, d)

    def test_at_eight_the_relay_is_the_byte_the_head_does_not_weigh(self):
        eight = self.r[8]
        self.assertLess(eight["heads"][0]["before"], 0.01)  # the byte before the read is w+7 at D = 8
        self.assertLess(eight["heads"][0]["share"], 0.5)
        # At chance: 100 reads, 95% binomial limits of a fair coin.
        self.assertTrue(40 <= eight["errors"] <= 60, eight["errors"])


class Refused(unittest.TestCase):
    def test_a_one_layer_model_is_refused(self):
        one = flipflop_circuit.DEFAULT.replace("rope-layers=2-s1", "rope-s1")
        with self.assertRaisesRegex(ValueError, "recorded 1 attention layers"):
            flipflop_circuit.readings(one, (8,), reads=4)


if __name__ == "__main__":
    unittest.main()
