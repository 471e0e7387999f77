# -*- Python -*-
# GoogleTest binaries (executables named *Tests) run as one lit suite, so the
# `check` target runs unit tests, lit tests and end-to-end tests together.
import os

import lit.formats

config.name = "TXL-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.txl_obj_root, "test", "Unit")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")

# Sanitizer builds (TXL_SANITIZE): fatal reports.
import sys
sys.path.insert(0, os.path.join(config.txl_src_root, "test", "sanitizers"))
import lit_sanitizers
lit_sanitizers.configure(config, config.txl_sanitize)
