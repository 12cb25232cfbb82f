package cliptok

import "container/heap"

// byteRunes returns GPT-2's bytes_to_unicode table: printable Latin-1
// bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, every other byte
// b to U+0100 + (the number of non-printable bytes below b).
func byteRunes() [256]rune {
	var t [256]rune
	n := 0
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}

// candidate is a mergeable adjacent pair in bpe's working word: the left
// symbol's node, the pair's ids and the merge.
type candidate struct {
	rank        int32
	pos         int32
	left, right int32
	id          int32
}

// candidates is a min-heap of candidates by (rank, pos).
type candidates []candidate

func (h candidates) Len() int { return len(h) }
func (h candidates) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h candidates) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candidates) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *candidates) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// bpe returns the ids of one word (at least two bytes) after applying the
// merges.
//
// It gives the same result as simple_tokenizer.py's bpe, which repeatedly
// takes the lowest-ranked adjacent pair and merges every occurrence of it
// in one left-to-right pass, but in O(n log n): the word is a linked list
// of symbols and the mergeable pairs wait in a heap ordered by (rank,
// position). All candidates of the lowest rank are taken together (they
// are all the same pair, and a pass cannot create new occurrences of the
// pair it merges because the merged symbol is longer than either part),
// merged in position order skipping those whose symbols changed, and only
// then are the pairs formed with the new symbols queued, so a pair with a
// lower rank created by the pass cannot jump into it.
func (t *Tokenizer) bpe(word string) []int32 {
	n := len(word)
	w := symbols{
		ids:   make([]int32, n),
		next:  make([]int32, n),
		prev:  make([]int32, n),
		alive: make([]bool, n),
	}
	for i := range n {
		w.ids[i] = t.byteID[word[i]]
		w.next[i] = int32(i + 1)
		w.prev[i] = int32(i - 1)
		w.alive[i] = true
	}
	w.ids[n-1] = t.byteEndID[word[n-1]]
	w.next[n-1] = -1

	h := make(candidates, 0, n)
	for i := range int32(n - 1) {
		if c, ok := t.candidate(&w, i); ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)

	var batch candidates
	var merged []int32
	for h.Len() > 0 {
		c := heap.Pop(&h).(candidate)
		if !w.valid(c) {
			continue
		}
		batch = append(batch[:0], c)
		for h.Len() > 0 && h[0].rank == c.rank {
			batch = append(batch, heap.Pop(&h).(candidate))
		}
		merged = merged[:0]
		for _, c := range batch { // popped in position order
			if w.valid(c) {
				w.merge(c)
				merged = append(merged, c.pos)
			}
		}
		for _, pos := range merged {
			if p := w.prev[pos]; p >= 0 {
				if c, ok := t.candidate(&w, p); ok {
					heap.Push(&h, c)
				}
			}
			if c, ok := t.candidate(&w, pos); ok {
				heap.Push(&h, c)
			}
		}
	}

	out := make([]int32, 0, 4)
	for i := int32(0); i >= 0; i = w.next[i] { // node 0 is never merged away
		out = append(out, w.ids[i])
	}
	return out
}

// symbols is bpe's working word: a doubly linked list over the word's
// bytes, each live node holding the id of the symbol that starts there.
type symbols struct {
	ids        []int32
	next, prev []int32 // -1 past the ends
	alive      []bool
}

// valid reports whether candidate c still describes the pair at c.pos.
func (w *symbols) valid(c candidate) bool {
	if !w.alive[c.pos] || w.ids[c.pos] != c.left {
		return false
	}
	j := w.next[c.pos]
	return j >= 0 && w.ids[j] == c.right
}

// merge replaces the pair at c.pos by the merged symbol.
func (w *symbols) merge(c candidate) {
	j := w.next[c.pos]
	w.ids[c.pos] = c.id
	w.alive[j] = false
	w.next[c.pos] = w.next[j]
	if w.next[j] >= 0 {
		w.prev[w.next[j]] = c.pos
	}
}

// candidate returns the merge candidate for the pair starting at node pos,
// if that pair is in merges.txt.
func (t *Tokenizer) candidate(w *symbols, pos int32) (candidate, bool) {
	j := w.next[pos]
	if j < 0 {
		return candidate{}, false
	}
	a, b := w.ids[pos], w.ids[j]
	m, ok := t.merges[pairKey(a, b)]
	if !ok {
		return candidate{}, false
	}
	return candidate{rank: m.rank, pos: pos, left: a, right: b, id: m.id}, true
}
