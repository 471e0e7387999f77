#!/usr/bin/env python3
"""atheris (libFuzzer for Python) target of txl-convert's checkpoint readers.

Input: the bytes of a torch.save file (zip archive or legacy format). Runs
what `txl-convert` runs on an input before it writes anything:
load_checkpoint (the zip and legacy readers and the restricted unpickler),
read_source (module / official / Hugging Face state_dict layouts) and the
float32 array of every entry. A file may be refused only with ConvertError,
which txl-convert prints as one line; any other exception escaping (a
traceback for the user) is a crash, as are atheris's own findings.

usage: converter_fuzzer.py [libFuzzer flags] [CORPUS_DIR...]
       (scripts/fuzz.sh runs it as the target `converter`)
"""

import importlib.util
import os
import sys
import tempfile

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTER = os.path.join(HERE, "..", "..", "tools", "txl-convert",
                         "txl-convert.py")

spec = importlib.util.spec_from_file_location("txl_convert", CONVERTER)
convert = importlib.util.module_from_spec(spec)
spec.loader.exec_module(convert)
atheris.instrument_all()

SCRATCH = tempfile.mkdtemp(prefix="txl-fuzz-convert.")
PATH = os.path.join(SCRATCH, "input.pt")


def test_one_input(data):
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        ckpt = convert.load_checkpoint(PATH)
        src = convert.read_source(ckpt)
        for name, tensor in src.entries:
            ckpt.array(tensor, name)
    except convert.ConvertError:
        pass


def main():
    atheris.Setup(sys.argv, test_one_input)
    try:
        atheris.Fuzz()
    finally:
        for name in os.listdir(SCRATCH):
            os.unlink(os.path.join(SCRATCH, name))
        os.rmdir(SCRATCH)


if __name__ == "__main__":
    main()
