r"""loupe-tiny's tokenizer for the Python trainers: the model folder's tokenizer.json (byte-level BPE).

The `tokenizers` package is used when importable; otherwise a pure-Python BPE reads the same file (the same pre-tokenizer
regex via the `regex` module, or an ASCII-exact `re` approximation of \p{L}/\p{N}), so the trainers run with what a fresh
machine gets from Debian's packages. `load_tokenizer` gives rl.py's small encode/decode API; `load_hf_style` wraps it in
the `tokenizers.Tokenizer` calls train.py makes (encode(s).ids, decode(ids), token_to_id, id_to_token).
"""
import json
import os



def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class PyBPE:
    def __init__(self, path):
        t = json.load(open(path))
        m = t["model"]
        if m["type"] != "BPE" or (t.get("pre_tokenizer") or {}).get("type") != "ByteLevel":
            raise ValueError(f"{path}: only byte-level BPE tokenizers are supported by the fallback")
        self.vocab = m["vocab"]
        self.inv = {v: k for k, v in self.vocab.items()}
        merges = [tuple(x.split(" ")) if isinstance(x, str) else tuple(x) for x in m["merges"]]
        self.ranks = {p: i for i, p in enumerate(merges)}
        self.added = {a["content"]: a["id"] for a in t["added_tokens"]}
        for a in t["added_tokens"]:
            self.inv[a["id"]] = a["content"]
        self.b2u = _bytes_to_unicode()
        self.u2b = {v: k for k, v in self.b2u.items()}
        try:
            import regex
            self.pat = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
        except ImportError:
            import re
            self.pat = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+| ?_+|\s+(?!\S)|\s+""")
        import re
        self.split_added = re.compile("(" + "|".join(re.escape(a) for a in sorted(self.added, key=len, reverse=True)) + ")")
        self.cache = {}

    def _bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best = min(((self.ranks.get((parts[i], parts[i + 1]), 1 << 30), i) for i in range(len(parts) - 1)))
            if best[0] == 1 << 30:
                break
            i = best[1]
            parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
        ids = [self.vocab[p] for p in parts]
        self.cache[word] = ids
        return ids

    def encode(self, text):
        out = []
        for seg in self.split_added.split(text):
            if not seg:
                continue
            if seg in self.added:
                out.append(self.added[seg])
                continue
            for w in self.pat.findall(seg):
                out.extend(self._bpe("".join(self.b2u[b] for b in w.encode("utf-8"))))
        return out

    def decode(self, ids):
        out, buf = [], []
        for i in ids:
            t = self.inv.get(int(i), "")
            if t in self.added:
                out.append(bytes(buf).decode("utf-8", "replace"))
                buf = []
                out.append(t)
            else:
                buf.extend(self.u2b[c] for c in t)
        out.append(bytes(buf).decode("utf-8", "replace"))
        return "".join(out)

    def token_to_id(self, t):
        return self.added.get(t, self.vocab.get(t))

    def id_to_token(self, i):
        return self.inv.get(int(i))


class HFTok:
    def __init__(self, path):
        from tokenizers import Tokenizer
        self.t = Tokenizer.from_file(path)

    def encode(self, text):
        return self.t.encode(text, add_special_tokens=False).ids

    def decode(self, ids):
        return self.t.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_to_id(self, t):
        return self.t.token_to_id(t)

    def id_to_token(self, i):
        return self.t.id_to_token(int(i))


def load_tokenizer(model_dir, prefer="auto"):
    path = os.path.join(model_dir, "tokenizer.json")
    if prefer != "python":
        try:
            return HFTok(path)
        except ImportError:
            pass
    return PyBPE(path)


class _Encoding:
    def __init__(self, ids):
        self.ids = ids


class HFStyle:
    """The `tokenizers.Tokenizer` calls train.py makes, over either tokenizer above."""

    def __init__(self, tok):
        self.tok = tok

    def encode(self, text):
        return _Encoding(self.tok.encode(text))

    def decode(self, ids, skip_special_tokens=False):
        if skip_special_tokens:
            raise ValueError("loupe-tiny's trainers decode with the special tokens kept")
        return self.tok.decode(ids)

    def token_to_id(self, t):
        return self.tok.token_to_id(t)

    def id_to_token(self, i):
        return self.tok.id_to_token(i)


def load_hf_style(model_dir, prefer="auto"):
    return HFStyle(load_tokenizer(model_dir, prefer))
