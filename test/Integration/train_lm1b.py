"""`train` on lm1b against the official definition of its train iterator.

  train_lm1b.py make DIR SEED BSZ BPTT EPOCHS
  train_lm1b.py compare DIR METRICS.jsonl EPOCHS
  train_lm1b.py retag CHECKPOINT DATASET

`make` writes a small One Billion Word layout under DIR/lm1b (a 50-symbol
1b_word_vocab.txt, three training shards of ragged sentences, a held-out
file) and the segments official train.py gets from
`corpus.get_iterator('train', bsz, bptt)` — `LMMultiFileIterator(paths,
vocab, bsz, bptt, shuffle=True)` after `np.random.seed(SEED)` — written out
here from its definition in the official pytorch/data_utils.py:

  each epoch (`for batch in tr_iter`, i.e. __iter__):
    np.random.shuffle(self.paths)        # in place: orders compound
    for path in self.paths:
      sents = encode_file(path, add_double_eos=True)   # <S> w1 .. wn <S>
      sents = [sents[i] for i in np.random.permutation(len(sents))]
      yield from stream_iterator(iter(sents))          # fresh per file

with `stream_iterator` filling `bsz` columns of `bptt` rows and dropping the
segment it cannot fill (and the column tails) when a file's sentences run
out. The path list starts in sorted order (txlc sorts the glob; Python's
glob gives directory order). Per epoch e it writes DIR/data_e.npy and
DIR/target_e.npy ([segments, bptt, bsz]) for `run-segments`, which carries
the memory over an epoch as train.py does (train() starts every epoch with
empty memory).

`compare` checks that the training run's per-update losses (metrics.jsonl,
log_interval 1, an optimizer step too small to move a parameter) are the
mean NLLs of those segments in that order (DIR/nll_e.npy from run-segments
with the initial parameters), and that the epochs turn where the official
iterator ends.

`retag` rewrites a training checkpoint's metadata "dataset" in place.
"""
import json
import os
import struct
import sys

import numpy as np

WORDS = ["<S>", "<UNK>"] + [f"w{i}" for i in range(48)]
ARCHIVE = "1-billion-word-language-modeling-benchmark-r13output"
SHARDS = "training-monolingual.tokenized.shuffled"


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def sentences(rng, count):
    out = []
    for _ in range(count):
        n = int(rng.integers(1, 10))
        out.append(" ".join(f"w{int(rng.integers(0, 55))}" for _ in range(n)))
    return out


def stream_iterator(sents, bsz, bptt):
    """Official LMShuffledIterator.stream_iterator with ext_len = 0."""
    stream = iter(sents)
    streams = [None] * bsz
    while True:
        data = np.full((bptt, bsz), -1, np.int64)
        target = np.full((bptt, bsz), -1, np.int64)
        try:
            for i in range(bsz):
                filled = 0
                while filled < bptt:
                    if streams[i] is None or len(streams[i]) <= 1:
                        streams[i] = next(stream)
                    n = min(len(streams[i]) - 1, bptt - filled)
                    data[filled:filled + n, i] = streams[i][:n]
                    target[filled:filled + n, i] = streams[i][1:n + 1]
                    streams[i] = streams[i][n:]
                    filled += n
        except StopIteration:
            return
        yield data, target


def make(out, seed, bsz, bptt, epochs):
    data_dir = os.path.join(out, "lm1b")
    shard_dir = os.path.join(data_dir, ARCHIVE, SHARDS)
    os.makedirs(shard_dir, exist_ok=True)
    with open(os.path.join(data_dir, "1b_word_vocab.txt"), "w") as f:
        for i, w in enumerate(WORDS):
            f.write(f"{w}\t{1000 - i}\n")
    rng = np.random.default_rng(11)
    paths = []
    for k, count in enumerate((23, 31, 17)):
        path = os.path.join(shard_dir, f"news.en-0000{k + 1}-of-00100")
        with open(path, "w") as f:
            f.write("\n".join(sentences(rng, count)) + "\n")
        paths.append(path)
    heldout = sentences(rng, 30)
    for split in ("valid.txt", "test.txt"):
        with open(os.path.join(data_dir, split), "w") as f:
            f.write("\n".join(heldout) + "\n")

    index = {w: i for i, w in enumerate(WORDS)}

    def encode_file(path):
        return [[index["<S>"]] + [index.get(w, index["<UNK>"])
                                  for w in line.split()] + [index["<S>"]]
                for line in open(path)]

    np.random.seed(seed)
    paths = sorted(paths)
    counts = []
    for e in range(epochs):
        np.random.shuffle(paths)
        blocks = []
        for path in paths:
            sents = encode_file(path)
            sents = [sents[i] for i in np.random.permutation(len(sents))]
            blocks.extend(stream_iterator(sents, bsz, bptt))
        np.save(os.path.join(out, f"data_{e}.npy"),
                np.stack([d for d, _ in blocks]))
        np.save(os.path.join(out, f"target_{e}.npy"),
                np.stack([t for _, t in blocks]))
        counts.append(len(blocks))
        print(f"epoch {e + 1}: {[os.path.basename(p)[8:13] for p in paths]} "
              f"{len(blocks)} segments")
    print(f"segments {sum(counts)}")


def compare(out, metrics_path, epochs):
    records = [json.loads(line) for line in open(metrics_path)]
    train = [r for r in records if r["kind"] == "train"]
    expected = []
    for e in range(epochs):
        nll = np.load(os.path.join(out, f"nll_{e}.npy")).astype(np.float64)
        expected.extend((e + 1, float(seg.mean())) for seg in nll)
    worst = 0.0
    for step, (record, (epoch, loss)) in enumerate(zip(train, expected), 1):
        if record["step"] != step or record["epoch"] != epoch:
            fail(f"update {step} logged as step {record['step']} epoch "
                 f"{record['epoch']}; the official iterator puts it in "
                 f"epoch {epoch}")
        worst = max(worst, abs(record["last_loss"] - loss))
        if abs(record["last_loss"] - loss) > 1e-5:
            fail(f"update {step} (epoch {epoch}): training loss "
                 f"{record['last_loss']:.7f}, the official segment's NLL "
                 f"{loss:.7f}")
    if len(train) > len(expected):
        fail(f"{len(train)} updates, the official iterator gives "
             f"{len(expected)} segments in {epochs} epochs")
    print(f"{len(train)} updates over {train[-1]['epoch']} epochs match the "
          f"official segments (max |diff| {worst:.1e})")


def retag(path, dataset):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header["__metadata__"]["dataset"] = dataset
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data)


if __name__ == "__main__":
    if sys.argv[1] == "retag":
        retag(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
             int(sys.argv[5]), int(sys.argv[6]))
    else:
        compare(sys.argv[2], sys.argv[3], int(sys.argv[4]))
