#!/usr/bin/python3
"""Writes the inputs of the real-program corpus (scenarios/real/*.toml) from a fixed seed.

    /usr/bin/python3 scenarios/real/make-inputs.py [DIR]

Writes DIR/inputs/* and makes DIR/tmp/ (sort's temporary files); DIR defaults to target/real
under the repository, where the scenarios' `cwd` points. The same seed gives the same bytes on
every machine (Python's random.Random is specified to), so the live runs, the recorded traces
and the simulator all see the same input. Files already there with the right size and digest are
kept. Run it before scenarios/real/record.py and before `foliosim validate` on the corpus.
"""

import hashlib
import os
import random
import sys

SEED = 15
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DIR = os.path.join(REPO, "target", "real")

# Words of a made-up language: text that compresses like text (xz, sort) without shipping any.
SYLLABLES = [a + b for a in "bcdfghklmnprstvz" for b in "aeiou"] + ["qu", "th", "sh", "ch"]


def words(rng, n):
    return ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(n)]


def lines_file(rng, size_bytes):
    """Lines of 1-12 random words: the external sort's input."""
    vocabulary = words(rng, 50_000)
    out, total = [], 0
    while total < size_bytes:
        line = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 12))) + "\n"
        out.append(line)
        total += len(line)
    return "".join(out).encode()


def text_file(rng, size_bytes):
    """Zipf-distributed words in sentences, with long repeats: the compressor's input, so that
    matches far back in a large window pay off."""
    vocabulary = words(rng, 20_000)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    out, total = [], 0
    while total < size_bytes:
        if out and rng.random() < 0.05:
            # a paragraph repeated from anywhere before: what a large dictionary finds
            part = out[rng.randrange(len(out))]
        else:
            n = rng.randint(8, 60)
            part = " ".join(rng.choices(vocabulary, weights, k=n)).capitalize() + ".\n"
        out.append(part)
        total += len(part)
    return "".join(out).encode()[:size_bytes]


def table_file(rng, rows):
    """CSV rows for the database: id, customer, city, amount, note."""
    cities = words(rng, 500)
    out = ["id,customer,city,amount,note\n"]
    for i in range(rows):
        out.append(
            f"{i},{rng.randrange(100_000)},{rng.choice(cities)},{rng.randrange(1, 1_000_000)},"
            f"{' '.join(words(rng, rng.randint(2, 8)))}\n"
        )
    return "".join(out).encode()


INPUTS = [
    # name, maker; sizes chosen so that each program runs about a second natively here
    ("lines.txt", lambda rng: lines_file(rng, 24 << 20)),
    ("text.txt", lambda rng: text_file(rng, 2 << 20)),
    ("table.csv", lambda rng: table_file(rng, 200_000)),
]


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR
    os.makedirs(os.path.join(corpus, "tmp"), exist_ok=True)
    directory = os.path.join(corpus, "inputs")
    os.makedirs(directory, exist_ok=True)
    for index, (name, make) in enumerate(INPUTS):
        # each input its own stream, so that changing one leaves the others as they were
        data = make(random.Random(SEED * 1000 + index))
        path = os.path.join(directory, name)
        digest = hashlib.sha256(data).hexdigest()
        if os.path.exists(path) and os.path.getsize(path) == len(data):
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() == digest:
                    print(f"{path}: {len(data)} bytes, sha256 {digest[:16]} (kept)")
                    continue
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        print(f"{path}: {len(data)} bytes, sha256 {digest[:16]}")


if __name__ == "__main__":
    main()
