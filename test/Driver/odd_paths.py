"""A model file whose path and [data] path hold a quote, `*/`, `?` and a
newline compiles, and the executable reports the data path byte for byte.

usage: odd_paths.py MODEL_TOML WORK_DIR
"""

import os
import subprocess
import sys


def main():
    model, work = sys.argv[1:3]
    folder = os.path.join(work, 'we"ird*/x\n*/y??=')
    os.makedirs(folder, exist_ok=True)
    data_path = '/data/a"b*/c?\\d'
    text = open(model).read().replace(
        'dataset = "ptb"',
        'dataset = "ptb"\npath = "%s\\n"' % data_path.replace("\\", "\\\\")
        .replace('"', '\\"'))
    path = os.path.join(folder, 'mo"del.toml')
    with open(path, "w") as f:
        f.write(text)
    exe = os.path.join(work, "exe")
    subprocess.run(["txlc", path, "-o", exe], check=True)
    help_text = subprocess.run([exe, "train", "--help"], capture_output=True,
                               text=True, check=True).stdout
    expected = "(default: %s\n" % data_path
    print("data path round trip:", "ok" if expected in help_text else
          "FAIL\n" + help_text)


if __name__ == "__main__":
    main()
