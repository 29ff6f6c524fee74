"""Builds a synthetic ~6,500-note / ~17 MB vault for obsidian-kb-bench from one or more real vaults.

Usage: make_synthetic_vault.py OUT_DIR SOURCE_VAULT [SOURCE_VAULT ...]
Each note is a source note (round-robin) plus 80-640 random words drawn from the sources, spread
over 40 folders x 7 subfolders. Deterministic (fixed seed).
"""

import os
import random
import sys


def main(out, sources):
    random.seed(7)
    src = []
    for root in sources:
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in files:
                if f.endswith(".md"):
                    with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                        src.append(fh.read())
    words = " ".join(src).split()
    total = 0
    for n in range(6500):
        extra = " ".join(random.choice(words) for _ in range(random.randint(80, 640)))
        text = src[n % len(src)] + "\n\n" + extra + "\n"
        folder = os.path.join(out, f"F{n % 40:02d}", f"S{n % 7}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"Note {n:05d}.md"), "w", encoding="utf-8") as fh:
            fh.write(text)
        total += len(text.encode())
    print(f"6500 notes, {total / 1e6:.1f} MB in {out}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: make_synthetic_vault.py OUT_DIR SOURCE_VAULT [SOURCE_VAULT ...]")
    main(sys.argv[1], sys.argv[2:])
