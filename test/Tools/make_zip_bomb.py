#!/usr/bin/env python3
"""A torch.save zip checkpoint with one member made a zip bomb.

usage: make_zip_bomb.py SRC DST pickle|storage

Copies the zip archive SRC to DST, with one member deflated and followed by
1.25 GB of zeros (about 1.2 MB compressed): "pickle" its data.pkl (whose
unpickling stops at its STOP opcode, before the zeros), "storage" its first
storage record (whose tensors read only the bytes before them). Reading
such a member whole needs 1.25 GB (issue 48, item 16).
"""

import sys
import zipfile

PADDING = 1250 << 20
CHUNK = 16 << 20


def main():
    src, dst, which = sys.argv[1:4]
    with zipfile.ZipFile(src) as archive:
        names = archive.namelist()
        members = {n: archive.read(n) for n in names}
    pickle = next(n for n in names if n.endswith("/data.pkl"))
    target = pickle if which == "pickle" else sorted(
        n for n in names if "/data/" in n)[0]
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as out:
        for name in names:
            if name != target:
                out.writestr(name, members[name])
                continue
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with out.open(info, "w", force_zip64=True) as w:
                w.write(members[name])
                zeros = bytes(CHUNK)
                for _ in range(PADDING // CHUNK):
                    w.write(zeros)


if __name__ == "__main__":
    main()
