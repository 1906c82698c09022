"""Cross-program races in an interpreted launch, and the work inside it (candidate job, CPU).

- **Programs run one after another.** A GPU runs a launch's programs concurrently, so a program
  that reads what another program of the same launch wrote without an atomic (a non-atomic
  accumulation across programs, a result one program publishes to the others) computes a value
  that depends on scheduling; the interpreter, running them in order, always gets the sequential
  answer. `RaceDetector` records, for every armed forward (the candidate's job arms every run),
  which program loaded and which stored each address, and when, and reports a launch in which a
  program loaded an address another program stored non-atomically (or stored one another program
  had loaded), unless atomics order the two: the earlier program did, after its access, an
  atomic that changed memory, and the later one, before its access, an atomic on the same
  address and then a branch on an atomic's result (`RaceDetector._ordered`: the "last program
  reduces" split reduction, a spin lock). Atomics are not racing accesses themselves, and an
  atomic anywhere else in the launch, or one that orders nothing, excuses nothing.
- **The work inside a launch.** The same records count, per armed launch, the elements its
  programs loaded, stored and touched with atomics (masked-off lanes excluded; counted before the
  race check thins its addresses): `RaceDetector.work`, one `(loads, stores, atomics)` per launch
  of the last armed forward. The interpreter runs programs one after another, so a deterministic
  kernel on the same inputs does the same counts; the candidate job compares them between a
  trial's runs (`tools.launch_record.with_counts`), which catches a memo decided inside a launch
  from a flag on the device (same launches, same arguments, a shorter path). A GPU has no such
  counts: there the host-side launch trace alone is compared.

The interpreter's builder feeds the detector through `tools.job.interp_checks.install`.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

MAX_RECORDED = 1 << 22
"""Load and store addresses a launch records in full. Past it, a launch keeps a random half of
the addresses it recorded (and of those to come) as often as needed to stay under it, and its
conflicts are found on that subset (`RaceDetector._thin`: the same addresses in every program,
so a conflict on a kept address is seen whole; the subset is drawn again for every launch).
Measured on the 2-core test machine (shared: timings +-30%), every run armed: a launch copying
1, 4 and 8 Mi fp32 elements (BLOCK 1024-4096) took 20%, 35% and 23% longer with the check, a
row softmax of 1 Mi elements no longer; the process's peak resident set for the 8 Mi copy
(16 Mi addresses, a quarter kept) was 588 MB against 452 MB without the check, and 1,157 MB
with 2^24 addresses recorded in full (+130% time)."""
MAX_PAIRS = 1 << 22
"""Conflicting (load, store) element pairs a launch with atomics examines for an ordering by
atomics; past it, a random subset of the conflicting loads (a race shows on most of them)."""
_MIX = np.uint64(0x9E3779B97F4A7C15)


class RaceDetector:
    """Cross-program load/store conflicts in interpreted launches, while `armed`; atomics order
    programs only as the module docstring says."""

    def __init__(self) -> None:
        self.armed = False
        self.findings: list[dict[str, Any]] = []
        self.thinned = 0
        """Launches checked on a subset of their addresses (past `MAX_RECORDED`)."""
        self._launch = 0
        self._grid = (1, 1, 1)
        self._in_atomic = 0
        self._counts: list[list[int]] = []
        self.work: list[tuple[int, int, int]] = []
        """(elements loaded, stored, touched by atomics) per launch of the last armed forward,
        in launch order (`check` sets it)."""
        self._reset()

    def _reset(self) -> None:
        self._pid = 0
        self._seq = 0
        self._loads: list[tuple[int, int, np.ndarray]] = []
        self._stores: list[tuple[int, int, np.ndarray]] = []
        self._atomics: list[tuple[int, int, np.ndarray]] = []
        self._releases: list[tuple[int, int, np.ndarray]] = []  # atomics that changed memory
        self._waits: list[tuple[int, int]] = []  # (program, moment) of a branch on an atomic
        self._recorded = 0
        self._level = 0  # addresses kept: those whose hash has `_level` leading zero bits
        self._salt = np.uint64(secrets.randbits(64))

    def _addresses(self, ptrs: Any, mask: Any) -> np.ndarray | None:
        try:
            addr = np.asarray(ptrs.data, dtype=np.uint64)
            if mask is None:
                return addr.ravel()
            m = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape)
            return addr[m].ravel()
        except Exception:  # noqa: BLE001 - a shape the interpreter accepted but we do not
            return None

    def _kept(self, addr: np.ndarray) -> np.ndarray:
        if not self._level:
            return addr
        h = (addr ^ self._salt) * _MIX  # uint64 arithmetic wraps: a multiplicative hash
        return addr[(h >> np.uint64(64 - self._level)) == 0]

    def _record(self, into: list, ptrs: Any, mask: Any) -> None:
        """A plain load or store of the current program (not one an atomic op made)."""
        if not self.armed or self._in_atomic:
            return
        picked = self._addresses(ptrs, mask)
        if picked is None:
            return
        self._count(0 if into is self._loads else 1, picked.size)
        picked = self._kept(picked)
        self._seq += 1
        into.append((self._pid, self._seq, picked))
        self._recorded += picked.size
        while self._recorded > MAX_RECORDED and self._level < 63:
            self._thin()

    def _thin(self) -> None:
        """Keep a random half of the recorded addresses (the same half of every access, so a
        conflict on a kept address is still seen whole)."""
        self._level += 1
        self._recorded = 0
        for records in (self._loads, self._stores):
            for k, (pid, seq, addr) in enumerate(records):
                kept = self._kept(addr)
                records[k] = (pid, seq, kept)
                self._recorded += kept.size

    def _record_atomic(self, ptrs: Any, mask: Any, modified: bool) -> None:
        """An atomic of the current program; `modified`: it changed the memory it touched (an
        atomic that writes what was there already, `atomic_add(p, 0)`, publishes nothing)."""
        if not self.armed:
            return
        picked = self._addresses(ptrs, mask)
        self._seq += 1
        if picked is not None:
            self._count(2, picked.size)
            self._atomics.append((self._pid, self._seq, picked))
            if modified:
                self._releases.append((self._pid, self._seq, picked))

    def _waited(self) -> None:
        """The current program branched on (or masked an access with) a value an atomic
        returned: it waits on what other programs did."""
        if self.armed:
            self._seq += 1
            self._waits.append((self._pid, self._seq))

    def _count(self, which: int, n: int) -> None:
        """`n` more elements loaded (0), stored (1) or touched by an atomic (2) in this launch."""
        if self._counts:
            self._counts[-1][which] += int(n)

    def new_launch(self, grid: tuple[int, int, int]) -> None:
        self._check()
        self._launch += 1
        self._grid = grid
        self._reset()
        if self.armed:
            self._counts.append([0, 0, 0])

    def set_program(self, x: int, y: int, z: int) -> None:
        g = self._grid
        # The interpreter runs x, then y, then z innermost: this id grows in running order.
        self._pid = (x * g[1] + y) * g[2] + z

    def check(self) -> None:
        """At the end of a forward: look for a conflict in its last launch; launches are
        numbered from 1 again in the next forward; `work` becomes this forward's counts."""
        self._check()
        self._launch = 0
        self.work = [tuple(c) for c in self._counts]
        self._counts = []

    def _check(self) -> None:
        """Look for a conflict in the launch recorded so far (then forget it)."""
        if not self.armed or not self._stores or not self._loads:
            self._reset()
            return
        try:
            finding = self._conflict()
        finally:
            level = self._level
            self._reset()
        if level:
            self.thinned += 1
        if finding is not None:
            self.findings.append({"launch": self._launch, **finding})

    def _conflict(self) -> dict[str, Any] | None:
        s_pid, s_seq, s_addr = _flatten(self._stores)
        order = np.argsort(s_addr, kind="stable")
        s_pid, s_seq, s_addr = s_pid[order], s_seq[order], s_addr[order]
        del order
        uniq, start, count = np.unique(s_addr, return_index=True, return_counts=True)
        del s_addr
        lo = np.minimum.reduceat(s_pid, start)
        hi = np.maximum.reduceat(s_pid, start)
        l_pid, l_seq, l_addr, i = self._conflicting_loads(uniq, lo, hi)
        if not l_pid.size:
            return None
        if not self._atomics:
            reader = int(l_pid[0])
            writer = int(lo[i[0]]) if lo[i[0]] != reader else int(hi[i[0]])
            n = int(np.unique(l_addr[l_pid == reader]).size)
            return {"reader": reader, "writer": writer, "addresses": n}
        # Atomics in the launch: each conflicting (load, store) pair of elements must be
        # ordered by them. Expand every conflicting load into its stores by other programs.
        cand = np.arange(l_pid.size)
        per = count[i[cand]]
        if int(per.sum()) > MAX_PAIRS:  # a random subset of the conflicting loads
            keep = np.random.default_rng(secrets.randbits(63)).random(cand.size)
            cand = cand[keep < MAX_PAIRS / float(per.sum())]
            per = count[i[cand]]
        rep = np.repeat(cand, per)
        first = np.repeat(start[i[cand]], per)
        offset = np.arange(rep.size) - np.repeat(np.cumsum(per) - per, per)
        w = first + offset
        r_pid, r_seq, w_pid, w_seq = l_pid[rep], l_seq[rep], s_pid[w], s_seq[w]
        cross = r_pid != w_pid
        r_pid, r_seq, w_pid, w_seq = r_pid[cross], r_seq[cross], w_pid[cross], w_seq[cross]
        # Programs run one at a time, in id order: the earlier access is the lower program's.
        early = np.minimum(r_pid, w_pid)
        late = np.maximum(r_pid, w_pid)
        e_seq = np.where(r_pid < w_pid, r_seq, w_seq)
        l_seq2 = np.where(r_pid < w_pid, w_seq, r_seq)
        span = int(late.max()) + 1
        key = early * span + late
        pairs, inverse = np.unique(key, return_inverse=True)
        e_last = np.zeros(pairs.size, dtype=np.int64)
        np.maximum.at(e_last, inverse, e_seq)
        l_first = np.full(pairs.size, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(l_first, inverse, l_seq2)
        ordered = self._ordered(pairs // span, pairs % span, e_last, l_first)
        if ordered.all():
            return None
        bad = int(np.argmax(~ordered))
        in_pair = inverse == bad
        j = int(np.argmax(in_pair))
        n = int(np.unique(l_addr[rep[cross][in_pair]]).size)
        return {"reader": int(r_pid[j]), "writer": int(w_pid[j]), "addresses": n}

    def _conflicting_loads(
        self, uniq: np.ndarray, lo: np.ndarray, hi: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """(program, sequence number, address, index in `uniq`) of each loaded element that
        another program of the launch stored, in program order; the loads are taken a few
        records at a time (memory), and no more than `MAX_PAIRS` conflicts are kept."""
        found: list[tuple[np.ndarray, ...]] = []
        total, group, size = 0, [], 0
        records = self._loads
        for k, rec in enumerate(records):
            group.append(rec)
            size += rec[2].size
            if size < (1 << 20) and k + 1 < len(records):
                continue
            pid, seq, addr = _flatten(group)
            group, size = [], 0
            i = np.clip(np.searchsorted(uniq, addr), 0, len(uniq) - 1)
            other = (uniq[i] == addr) & ((lo[i] != pid) | (hi[i] != pid))
            if other.any():
                found.append((pid[other], seq[other], addr[other], i[other]))
                total += int(other.sum())
                if total >= MAX_PAIRS:
                    break
        if not found:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=np.uint64), empty
        return tuple(np.concatenate(parts) for parts in zip(*found))

    def _ordered(
        self, early: np.ndarray, late: np.ndarray, e_last: np.ndarray, l_first: np.ndarray
    ) -> np.ndarray:
        """Per pair of programs: whether atomics order the earlier one's conflicting accesses
        before the later one's. The earlier program released: an atomic after its last access
        that changed memory (a write others can see). The later one acquired: an atomic on the
        same address before its first access, then a branch on (or a mask made of) an atomic's
        result before that access (it waited on what others did: a spin lock's compare-and-
        swap, the last program's counter). Atomics that write nothing new, or whose result
        nothing waits on, order nothing: on a GPU the programs still run side by side."""
        ordered = np.zeros(early.size, dtype=bool)
        if not self._releases or not self._waits:
            return ordered
        a_pid, a_seq, a_addr = _flatten(self._atomics)
        addrs = np.unique(a_addr)
        n_addr = max(int(addrs.size), 1)
        # The later program's last wait before its first conflicting access (-1: none). Moments
        # grow in program order, so the last wait before `l_first` is the later program's own
        # exactly when its program id is the later one's.
        w_pid = np.array([p for p, _ in self._waits], dtype=np.int64)
        w_seq = np.array([q for _, q in self._waits], dtype=np.int64)
        i = np.searchsorted(w_seq, l_first) - 1
        waited = np.where((i >= 0) & (w_pid[np.maximum(i, 0)] == late), w_seq[np.maximum(i, 0)], -1)
        # First atomic of each (program, address), for the acquire.
        key = a_pid * n_addr + np.searchsorted(addrs, a_addr)
        keys, kidx = np.unique(key, return_inverse=True)
        a_first = np.full(keys.size, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(a_first, kidx, a_seq)
        # Last memory-changing atomic of each (program, address), for the release.
        r_pid, r_seq, r_addr = _flatten(self._releases)
        r_key = r_pid * n_addr + np.searchsorted(addrs, r_addr)
        r_keys, r_idx = np.unique(r_key, return_inverse=True)
        r_last = np.zeros(r_keys.size, dtype=np.int64)
        np.maximum.at(r_last, r_idx, r_seq)
        # The earlier program's release addresses (a contiguous run of `r_keys` per program).
        lo = np.searchsorted(r_keys, early * n_addr)
        hi = np.searchsorted(r_keys, (early + 1) * n_addr)
        per = hi - lo
        if not per.any():
            return ordered
        rep = np.repeat(np.arange(early.size), per)
        k = np.repeat(lo, per) + (np.arange(rep.size) - np.repeat(np.cumsum(per) - per, per))
        released = r_last[k] > e_last[rep]
        want = late[rep] * n_addr + (r_keys[k] - early[rep] * n_addr)
        j = np.clip(np.searchsorted(keys, want), 0, keys.size - 1)
        acquired = (keys[j] == want) & (a_first[j] < waited[rep]) & (waited[rep] < l_first[rep])
        np.logical_or.at(ordered, rep, released & acquired)
        return ordered


class AtomicResult(np.ndarray):
    """The values an atomic returned, and what numpy computes from them (its ufuncs keep the
    subclass: `done == n - 1` is one too). A branch on one is the program waiting on an
    atomic (`RaceDetector._waited`, through `detector`)."""

    detector: RaceDetector | None = None

    def __bool__(self) -> bool:
        if AtomicResult.detector is not None:
            AtomicResult.detector._waited()
        return bool(np.asarray(self))


def _flatten(records: list[tuple[int, int, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """(program ids, sequence numbers, addresses), one element per recorded address."""
    sizes = [a.size for _, _, a in records]
    pid = np.repeat(np.array([p for p, _, _ in records], dtype=np.int64), sizes)
    seq = np.repeat(np.array([s for _, s, _ in records], dtype=np.int64), sizes)
    addr = np.concatenate([a for _, _, a in records]) if records else np.zeros(0, np.uint64)
    return pid, seq, addr
