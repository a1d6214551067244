#!/usr/bin/env python3
"""Builds a PyTorch memory snapshot of about --bytes from a real one, for import benchmarks.

The source's trace is repeated --copies times (or as often as --bytes needs): copy k has every
address shifted by k * SPAN (SPAN covers the source's whole address range) and every time by k *
(its duration + 1 s), and the final `segments` state holds every copy's segments, shifted the
same way, so the importer's state rebuild sees a consistent snapshot. The pickle is written as
CPython's protocol-4 pickler writes a real snapshot (opcodes, memo use, 64 KiB FRAMEs: keys and
action names memoized once and fetched with BINGET, a fresh 'N/A' str per entry), streamed: the
output is never held in memory, so 1 GB takes ~1 GB of disk and little RAM.

  tools/bench/make_big_snapshot.py tests/data/real/traces/gpt2_generate.default.pickle.xz big.pickle --bytes 1e9
"""
import argparse
import gzip
import lzma
import pickle
import struct
import sys

FRAME_BYTES = 64 * 1024
BATCH = 1000  # items per APPENDS / SETITEMS, as CPython


class Writer:
    def __init__(self, out):
        self.out = out
        self.buf = bytearray()
        self.memo_count = 0
        self.shared = {}  # str -> memo index, for strings written once and fetched after

    def flush_frame(self, force=False):
        if self.buf and (force or len(self.buf) >= FRAME_BYTES):
            self.out.write(b"\x95" + struct.pack("<Q", len(self.buf)) + self.buf)
            self.buf = bytearray()

    def memoize(self):
        self.buf += b"\x94"
        self.memo_count += 1

    def get(self, index):
        self.buf += b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)

    def int(self, v):
        b = self.buf
        if v is True or v is False:
            b += b"\x88" if v else b"\x89"
        elif 0 <= v < 256:
            b += b"K" + bytes([v])
        elif 0 <= v < 65536:
            b += b"M" + struct.pack("<H", v)
        elif -(2**31) <= v < 2**31:
            b += b"J" + struct.pack("<i", v)
        else:
            n = (v.bit_length() + 8) // 8  # two's complement, with room for the sign bit
            b += b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)

    def str(self, s, share):
        if share and s in self.shared:
            return self.get(self.shared[s])
        data = s.encode()
        if len(data) < 256:
            self.buf += b"\x8c" + bytes([len(data)]) + data
        else:
            self.buf += b"X" + struct.pack("<I", len(data)) + data
        if share:
            self.shared[s] = self.memo_count
        self.memoize()

    def value(self, v):
        if v is None:
            self.buf += b"N"
        elif isinstance(v, bool) or isinstance(v, int):
            self.int(v)
        elif isinstance(v, float):
            self.buf += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            self.str(v, share=v != "N/A")
        elif isinstance(v, dict):
            self.dict(v.items())
        elif isinstance(v, list):
            self.list(v)
        elif isinstance(v, tuple):
            if not v:
                self.buf += b")"
                return
            if len(v) > 3:
                self.buf += b"("
            for item in v:
                self.value(item)
            self.buf += {1: b"\x85", 2: b"\x86", 3: b"\x87"}.get(len(v), b"t")
            self.memoize()
        else:
            sys.exit("make_big_snapshot: cannot write a %s" % type(v).__name__)

    def dict(self, items):
        self.buf += b"}"
        self.memoize()
        items = list(items)
        for i in range(0, len(items), BATCH):
            batch = items[i : i + BATCH]
            if len(batch) > 1:
                self.buf += b"("
            for k, v in batch:
                self.str(k, share=True)
                self.value(v)
            self.buf += b"u" if len(batch) > 1 else b"s"
        self.flush_frame()

    def list(self, items):
        self.buf += b"]"
        self.memoize()
        self.append_items(items)

    def append_items(self, items):
        batch = 0
        for item in items:
            if batch == 0:
                self.buf += b"("
            self.value(item)
            batch += 1
            if batch == BATCH:
                self.buf += b"e"
                batch = 0
        if batch:
            self.buf += b"e"


def entry_template(w, entry):
    """An entry's opcodes as pieces: bytes, then ("addr" | "time_us", value) for the values a copy
    shifts. Every str it needs but 'N/A' is memoized already; returns (pieces, memoizes)."""
    pieces, memoizes = [], 1
    buf, w.buf = w.buf, bytearray(b"}\x94(")
    for key, value in entry.items():
        w.str(key, share=True)
        shifted_key = key == "addr" and entry.get("action") != "oom" or key == "time_us" and value
        if shifted_key:
            pieces.append(bytes(w.buf))
            pieces.append((key, value))
            w.buf = bytearray()
        else:
            before = w.memo_count
            w.value(value)
            memoizes += w.memo_count - before
            w.memo_count = before
    w.buf += b"u"
    pieces.append(bytes(w.buf))
    w.buf = buf
    return pieces, memoizes


def write_copy(w, templates, address_shift, time_shift):
    for start in range(0, len(templates), BATCH):
        w.buf += b"("
        for pieces, memoizes in templates[start : start + BATCH]:
            for piece in pieces:
                if type(piece) is bytes:
                    w.buf += piece
                else:
                    w.int(piece[1] + (address_shift if piece[0] == "addr" else time_shift))
            w.memo_count += memoizes
            if len(w.buf) >= FRAME_BYTES:
                w.flush_frame()
        w.buf += b"e"


def shifted(entry, address_shift, time_shift):
    e = dict(entry)
    if "addr" in e and e.get("action") != "oom":
        e["addr"] = e["addr"] + address_shift
    if "time_us" in e and e["time_us"]:
        e["time_us"] = e["time_us"] + time_shift
    return e


def shifted_segment(seg, address_shift):
    s = dict(seg, address=seg["address"] + address_shift)
    s["blocks"] = [dict(b, address=b["address"] + address_shift) if "address" in b else dict(b) for b in seg["blocks"]]
    return s


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("output")
    parser.add_argument("--bytes", type=float, default=1e9, help="about how big the pickle gets")
    parser.add_argument("--copies", type=int, help="how many copies of the trace (instead of --bytes)")
    args = parser.parse_args()

    opener = lzma.open if args.source.endswith(".xz") else gzip.open if args.source.endswith(".gz") else open
    with opener(args.source, "rb") as f:
        raw = f.read()
    snapshot = pickle.loads(raw)
    trace = snapshot["device_traces"][0]
    addresses = [e["addr"] for e in trace if "addr" in e and e.get("action") != "oom"]
    addresses += [s["address"] + s["total_size"] for s in snapshot["segments"]]
    addresses += [s["address"] for s in snapshot["segments"]]
    span = 1 << (max(addresses) - min(addresses)).bit_length()
    times = [e["time_us"] for e in trace if e.get("time_us")]
    period = (max(times) - min(times) if times else 0) + 1_000_000
    copies = args.copies or max(1, round(args.bytes / len(raw)))
    if min(addresses) + copies * span >= 2**63:
        sys.exit("make_big_snapshot: %d copies do not fit in the address space" % copies)

    with open(args.output, "wb") as out:
        w = Writer(out)
        out.write(b"\x80\x04")
        w.buf += b"}"
        w.memoize()
        w.buf += b"("
        w.str("segments", share=True)
        w.list(shifted_segment(s, k * span) for k in range(copies) for s in snapshot["segments"])
        w.str("device_traces", share=True)
        w.buf += b"]"
        w.memoize()
        w.buf += b"]"  # device 0's trace, appended to in batches as it is generated
        w.memoize()
        # Copy 0 through the general writer (it memoizes every key and action name); later
        # copies from per-entry templates, which differ only in the shifted addr and time_us.
        w.append_items(trace)
        templates = [entry_template(w, e) for e in trace]
        for k in range(1, copies):
            write_copy(w, templates, k * span, k * period)
        w.buf += b"a"
        w.str("allocator_settings", share=True)
        w.value(snapshot.get("allocator_settings", {}))
        w.str("external_annotations", share=True)
        w.value(snapshot.get("external_annotations", []))
        w.buf += b"u."
        w.flush_frame(force=True)
        size = out.tell()
    print("%s: %d copies of %d entries, %d bytes" % (args.output, copies, len(trace), size))


if __name__ == "__main__":
    main()
