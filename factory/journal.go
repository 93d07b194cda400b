package factory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Journal entry kinds (docs/factory-api.md): every step that changes the world writes an
// intent first and a receipt after; an operator's resolution of an intent
// left without a receipt is a reconciliation.
const (
	KindIntent         = "intent"
	KindReceipt        = "receipt"
	KindReconciliation = "reconciliation"
)

// Journal actions: what an intent announces.
const (
	ActionClone   = "clone"   // clone the repository into the workspace
	ActionAgent   = "agent"   // run the coding agent in the workspace
	ActionVerify  = "verify"  // run the verification commands
	ActionCommit  = "commit"  // commit the agent's changes in the workspace
	ActionExport  = "export"  // write the diff and changes.zip of the checkpoint
	ActionResolve = "resolve" // an operator's reconciliation
)

// Entry is one journal entry. Hash is the SHA-256 of the entry's fields and
// PrevHash, the previous entry's Hash ("" for the first): editing, removing
// or reordering any entry breaks the chain (VerifyJournal).
type Entry struct {
	Seq      int             `json:"seq"`
	Kind     string          `json:"kind"`
	Action   string          `json:"action"`
	Ref      int             `json:"ref,omitempty"` // the intent a receipt or reconciliation answers
	Data     json.RawMessage `json:"data"`
	At       time.Time       `json:"at"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// JournalSummary is the chain check served with a run and its journal.
type JournalSummary struct {
	Entries int    `json:"entries"`
	Valid   bool   `json:"valid"`
	Problem string `json:"problem,omitempty"`
	// OpenIntents are intents without a receipt or reconciliation.
	OpenIntents []int `json:"open_intents"`
}

// entryHash computes an entry's hash. The fields are encoded as one JSON
// array, so no two different entries share an encoding.
func entryHash(runID string, e Entry) string {
	data := string(e.Data)
	if data == "" {
		data = "null"
	}
	enc, _ := json.Marshal([]any{runID, e.Seq, e.Kind, e.Action, e.Ref, e.At.UnixMilli(), e.PrevHash, data})
	sum := sha256.Sum256(enc)
	return hex.EncodeToString(sum[:])
}

// chain fills the sequence number and hashes of e as the entry after prev
// (nil for the first).
func chain(runID string, prev *Entry, e Entry) Entry {
	e.Seq, e.PrevHash = 1, ""
	if prev != nil {
		e.Seq, e.PrevHash = prev.Seq+1, prev.Hash
	}
	e.At = e.At.UTC().Truncate(time.Millisecond)
	e.Hash = entryHash(runID, e)
	return e
}

// VerifyJournal checks the hash chain of a run's entries, in stored order,
// against the head recorded with the run (count and last hash, written in
// the same transaction as each entry), so a removed last entry is detected
// too. valid confirms only the chain, not what the entries claim.
func VerifyJournal(runID string, entries []Entry, headCount int, headHash string) JournalSummary {
	s := JournalSummary{Entries: len(entries), Valid: true, OpenIntents: openIntents(entries)}
	fail := func(format string, args ...any) JournalSummary {
		s.Valid, s.Problem = false, fmt.Sprintf(format, args...)
		return s
	}
	prev := ""
	for i, e := range entries {
		switch {
		case e.Seq != i+1:
			return fail("entry %d has sequence number %d: an entry was removed or reordered", i+1, e.Seq)
		case e.PrevHash != prev:
			return fail("entry %d does not follow entry %d (previous hash differs)", e.Seq, e.Seq-1)
		case entryHash(runID, e) != e.Hash:
			return fail("entry %d was changed (its hash does not match its content)", e.Seq)
		case e.Kind != KindIntent && e.Kind != KindReceipt && e.Kind != KindReconciliation:
			return fail("entry %d has unknown kind %q", e.Seq, e.Kind)
		}
		prev = e.Hash
	}
	if len(entries) != headCount {
		return fail("the journal holds %d entries but the run recorded %d: entries were removed or added", len(entries), headCount)
	}
	if prev != headHash {
		return fail("the last entry is not the one the run recorded")
	}
	return s
}

// openIntents lists the intents no receipt or reconciliation refers to.
func openIntents(entries []Entry) []int {
	answered := map[int]bool{}
	for _, e := range entries {
		if e.Kind != KindIntent && e.Ref > 0 {
			answered[e.Ref] = true
		}
	}
	open := []int{}
	for _, e := range entries {
		if e.Kind == KindIntent && !answered[e.Seq] {
			open = append(open, e.Seq)
		}
	}
	return open
}
