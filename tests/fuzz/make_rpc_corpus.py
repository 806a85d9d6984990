#!/usr/bin/env python3
"""Writes the seed corpus of the RPC decoder's fuzzer (corpus/rpc_wire/): well-formed
messages of every type, and a few malformed ones. Run it again after a wire change; the
seeds are committed. File names starting with 'bad-' must be rejected by the decoder,
the others must decode (tst_wire_format checks both)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "rpc_wire")
TOKEN = b"fuzz-token"


def header(mtype, ntensors, src=0, dst=1, msg_id=(0 << 48) | 1, ctx=-1):
    return struct.pack("<IHBBiiQqII", 0x43505244, 1, mtype, 0, src, dst, msg_id, ctx, ntensors, 0)


def none(): return b"\x00"
def boolean(b): return b"\x01" + bytes([1 if b else 0])
def integer(i): return b"\x02" + struct.pack("<q", i)
def real(d): return b"\x03" + struct.pack("<d", d)
def string(s): return b"\x04" + struct.pack("<I", len(s)) + s.encode()
def lst(*items): return b"\x05" + struct.pack("<I", len(items)) + b"".join(items)
def tensor(dtype, sizes, frame, rg=False):
    return b"\x06" + bytes([dtype, 1 if rg else 0, len(sizes)]) + b"".join(struct.pack("<q", s) for s in sizes) + struct.pack("<I", frame)
def rref(owner, rid, fid, parent): return b"\x07" + struct.pack("<iqqi", owner, rid, fid, parent)


def message(frames):
    return b"".join(struct.pack("<I", len(f)) + f for f in frames)


def write(name, frames):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(message(frames))


def main():
    os.makedirs(OUT, exist_ok=True)
    t33 = struct.pack("<9f", *range(9))
    write("call-add.bin", [TOKEN, header(1, 2), lst(string("add"), lst(tensor(0, [3, 3], 0), tensor(0, [3, 3], 1))), t33, t33])
    write("call-values.bin", [TOKEN, header(1, 1), lst(string("echo"), lst(none(), boolean(True), integer(-7), real(2.5), string("x"), lst(tensor(4, [2], 0, False)))), struct.pack("<2q", 1, 2)])
    write("call-dtypes.bin", [TOKEN, header(1, 3), lst(string("echo"), lst(tensor(1, [1], 0), tensor(2, [2], 1), tensor(3, [1, 1, 2], 2, True))), b"\0" * 8, b"\0" * 4, b"\0" * 4])
    write("response.bin", [TOKEN, header(2, 1, 1, 0), tensor(0, [3, 3], 0), t33])
    write("error.bin", [TOKEN, header(3, 0, 1, 0), string("Error on worker 1 (worker1): boom")])
    write("remote-call.bin", [TOKEN, header(4, 0), lst(string("echo"), lst(rref(1, (0 << 48) | 3, (0 << 48) | 4, 0)), integer(5), integer(6))])
    write("fetch.bin", [TOKEN, header(5, 0), lst(integer(5))])
    write("user-delete.bin", [TOKEN, header(6, 0), lst(integer(5), integer(6))])
    write("fork-request.bin", [TOKEN, header(7, 0), lst(integer(5), integer(7))])
    write("child-accept.bin", [TOKEN, header(8, 0), lst(integer(7))])
    write("ack.bin", [TOKEN, header(9, 0, 1, 0), none()])
    write("bad-token.bin", [b"nope", header(1, 0), lst(string("echo"), lst())])
    write("bad-huge-tensor.bin", [TOKEN, header(1, 1), lst(string("echo"), lst(tensor(0, [1 << 40], 0))), b"abcd"])
    write("bad-dtype.bin", [TOKEN, header(1, 1), lst(string("echo"), lst(tensor(9, [1], 0))), b"abcd"])
    write("bad-truncated.bin", [TOKEN, header(1, 0), lst(string("echo"), lst())[:6]])
    write("bad-type.bin", [TOKEN, header(42, 0), none()])
    write("bad-list-count.bin", [TOKEN, header(2, 0), b"\x05" + struct.pack("<I", 0xffffffff)])
    write("bad-frames.bin", [TOKEN, header(1, 4000), lst(string("echo"), lst())])


if __name__ == "__main__":
    main()
