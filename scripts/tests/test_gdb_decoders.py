"""The gdb helpers' decoders (gdb-scripts/ftlabs/decode.py), on the host,
without gdb: they take plain ints, names and dicts."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gdb-scripts"))

from ftlabs import decode  # noqa: E402

# The trace_event_file flag enum of 6.1 (include/linux/trace_events.h).
BITS = {"EVENT_FILE_FL_ENABLED_BIT": 0, "EVENT_FILE_FL_RECORDED_CMD_BIT": 1,
        "EVENT_FILE_FL_RECORDED_TGID_BIT": 2, "EVENT_FILE_FL_FILTERED_BIT": 3,
        "EVENT_FILE_FL_NO_SET_FILTER_BIT": 4, "EVENT_FILE_FL_SOFT_MODE_BIT": 5,
        "EVENT_FILE_FL_SOFT_DISABLED_BIT": 6, "EVENT_FILE_FL_TRIGGER_MODE_BIT": 7,
        "EVENT_FILE_FL_TRIGGER_COND_BIT": 8, "EVENT_FILE_FL_PID_FILTER_BIT": 9,
        "EVENT_FILE_FL_WAS_ENABLED_BIT": 10}
NAMES = decode.file_flag_names(bits=BITS)


class Counts(unittest.TestCase):
    def test_unlimited_is_minus_one_signed_or_not(self):
        self.assertEqual(decode.count_text(-1), "unlimited")
        self.assertEqual(decode.count_text((1 << 64) - 1), "unlimited")
        self.assertEqual(decode.count_text(5), "count=5")
        self.assertEqual(decode.count_text(0), "count=0")

    def test_plural(self):
        self.assertEqual(decode.plural(1, "function"), "1 function")
        self.assertEqual(decode.plural(2, "entry"), "2 entries")
        self.assertEqual(decode.plural(0, "event"), "0 events")


class Probes(unittest.TestCase):
    def test_command_from_ops_name(self):
        self.assertEqual(decode.probe_command("traceoff_count_probe_ops"), ("traceoff", True))
        self.assertEqual(decode.probe_command("traceon_probe_ops"), ("traceon", False))
        self.assertEqual(decode.probe_command("event_enable_probe_ops"),
                         ("enable_event", False))
        self.assertEqual(decode.probe_command("event_disable_count_probe_ops"),
                         ("disable_event", True))
        self.assertEqual(decode.probe_command("snapshot_count_probe_ops"), ("snapshot", True))

    def test_data_slot(self):
        self.assertEqual(decode.probe_data_text("traceoff", True, 3), "count=3")
        self.assertEqual(decode.probe_data_text("traceoff", True, (1 << 64) - 1), "unlimited")
        self.assertEqual(decode.probe_data_text("traceon", False, 0), "unlimited")
        self.assertEqual(decode.probe_data_text("traceoff", True, 0xffff888000001000),
                         "data=0xffff888000001000")
        self.assertEqual(decode.probe_data_text("stacktrace", False, 0xffff888000001000),
                         "data=0xffff888000001000")

    def test_event_probe_uses_its_event(self):
        self.assertEqual(decode.probe_data_text("enable_event", False, 0xffff888000001000,
                                                "sched:sched_switch:unlimited"),
                         "sched:sched_switch:unlimited")
        # Unreadable: the raw pointer.
        self.assertEqual(decode.probe_data_text("enable_event", False, 0xffff888000001000),
                         "data=0xffff888000001000")


class EventFlags(unittest.TestCase):
    def test_names_from_bits_or_masks(self):
        self.assertEqual(NAMES[1 << 5], "SOFT_MODE")
        masks = {"EVENT_FILE_FL_ENABLED": 1, "EVENT_FILE_FL_SOFT_MODE": 32}
        self.assertEqual(decode.file_flag_names(masks=masks, bits=BITS),
                         {1: "ENABLED", 32: "SOFT_MODE"})

    def test_decode_flags(self):
        self.assertEqual(decode.decode_flags(1 | 2 | 32 | 64, NAMES),
                         "ENABLED|RECORDED_CMD|SOFT_MODE|SOFT_DISABLED")
        self.assertEqual(decode.decode_flags(0, NAMES), "none")
        self.assertEqual(decode.decode_flags(1 | 1 << 20, NAMES), "ENABLED|0x100000")

    def test_enable_file(self):
        on, soft, off = 1, 1 << 5, 1 << 6
        self.assertEqual(decode.enable_file_text(0, NAMES), "0")
        self.assertEqual(decode.enable_file_text(on, NAMES), "1")
        self.assertEqual(decode.enable_file_text(on | soft, NAMES), "1*")
        self.assertEqual(decode.enable_file_text(on | soft | off, NAMES), "0*")
        # Checkpoint 1: no soft bits at all.
        self.assertEqual(decode.enable_file_text(on, {1: "ENABLED"}), "1")

    def test_flag_changes(self):
        self.assertEqual(decode.flag_changes("sched sched_switch +SOFT_MODE -ENABLED".split(),
                                             NAMES), (32, 1, ["sched", "sched_switch"]))
        with self.assertRaises(ValueError) as e:
            decode.flag_changes(["+NOPE"], NAMES)
        self.assertIn("no event file flag NOPE", str(e.exception))

    def test_event_words(self):
        self.assertEqual(decode.event_words("sched sched_switch"),
                         ("sched", "sched_switch", None))
        self.assertEqual(decode.event_words("sched/sched_switch foo"),
                         ("sched", "sched_switch", "foo"))
        with self.assertRaises(ValueError):
            decode.event_words("sched")

    def test_instance_label(self):
        self.assertEqual(decode.instance_label(None), "the top level instance")
        self.assertEqual(decode.instance_label("foo"), "instance 'foo'")


class Triggers(unittest.TestCase):
    def test_trigger_text(self):
        self.assertEqual(decode.trigger_text("traceoff", 3, filter_str="prev_pid == 0"),
                         "traceoff:count=3 if prev_pid == 0")
        self.assertEqual(decode.trigger_text("enable_event", 1, "sched:sched_wakeup"),
                         "enable_event:sched:sched_wakeup:count=1")
        self.assertEqual(decode.trigger_text("snapshot", -1, paused=True),
                         "snapshot:unlimited [paused]")


class Buffers(unittest.TestCase):
    def test_clock_line(self):
        self.assertEqual(decode.clock_line(["local", "global", "mono"], 2),
                         "local global [mono]")

    def test_ring_buffer_events(self):
        self.assertEqual(decode.ring_buffer_events([(10, 2, 3), (4, 0, 0)]), 9)
        self.assertEqual(decode.ring_buffer_events([]), 0)


class Callsite(unittest.TestCase):
    def test_nop(self):
        self.assertEqual(decode.callsite(0x1000, decode.NOP5 + b"\x90" * 4), ("nop", 0x1000))

    def test_call_after_endbr(self):
        code = decode.ENDBR64 + b"\xe8" + (-0x104).to_bytes(4, "little", signed=True)
        self.assertEqual(decode.callsite(0x2000, code), ("call", 0x2000 + 4 + 5 - 0x104))

    def test_none(self):
        self.assertEqual(decode.callsite(0x1000, b"\x55" * 9), ("none", 0x1000))


class Requests(unittest.TestCase):
    def test_request(self):
        self.assertEqual(decode.request_command(b"ftlab-gdb: ft-soft sched sched_switch on\n"),
                         "ft-soft sched sched_switch on")
        self.assertIsNone(decode.request_command(b"hello\n"))
        self.assertIsNone(decode.request_command(b"ftlab-gdb: "))

    def test_finished(self):
        self.assertTrue(decode.lab_finished("ftlab-finished"))
        self.assertFalse(decode.lab_finished("(none)"))
        self.assertFalse(decode.lab_finished("ftlab-finished-not"))

    def test_symbol_text(self):
        self.assertEqual(decode.symbol_text("schedule + 4 in section .text\n"), "schedule+4")
        self.assertEqual(decode.symbol_text("No symbol matches 0x1."), "")
        self.assertEqual(decode.tail([1, 2, 3], 2), [2, 3])
        self.assertEqual(decode.tail([1, 2, 3], 0), [])


class NoGdb(unittest.TestCase):
    def test_decode_does_not_import_gdb(self):
        self.assertNotIn("gdb", sys.modules)


if __name__ == "__main__":
    unittest.main()
