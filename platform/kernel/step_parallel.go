package kernel

// parallel starts every branch at once, in branch order, and continues when
// all have ended. The branches share the enclosing scope, so after the
// join every branch's steps are visible. A fail or succeed in any branch
// ends the run and cancels the others.

func (m *machine) enterParallel(tok *Token, n *node) {
	tok.Wait = WaitJoin
	tok.Pending = len(n.branches)
	for _, b := range n.branches {
		if b.entry == nil {
			tok.Pending--
			continue
		}
		m.push(m.newToken(*b.entry, tok.Scope, tok.ID))
	}
	if tok.Pending == 0 {
		m.proceed(tok, nullJSON, n.next)
	}
}
