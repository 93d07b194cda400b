package factory

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"
)

const testRun = "0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e"

// buildChain returns n chained entries and the head a run would record.
func buildChain(n int) ([]Entry, int, string) {
	var out []Entry
	var prev *Entry
	at := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	kinds := []string{KindIntent, KindReceipt, KindReconciliation}
	for i := 0; i < n; i++ {
		e := Entry{Kind: kinds[i%3], Action: ActionAgent, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), At: at.Add(time.Duration(i) * time.Second)}
		if e.Kind != KindIntent {
			e.Ref = i
		}
		e = chain(testRun, prev, e)
		out = append(out, e)
		prev = &out[len(out)-1]
	}
	if n == 0 {
		return out, 0, ""
	}
	return out, n, out[n-1].Hash
}

func TestJournalChainValid(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	for _, n := range []int{0, 1, 2, 7} {
		entries, count, head := buildChain(n)
		s := VerifyJournal(testRun, entries, count, head)
		is.True(s.Valid)
		is.Equal(s.Problem, "")
		is.Equal(s.Entries, n)
	}
}

func TestJournalDetectsTampering(t *testing.T) {
	t.Parallel()
	tamper := map[string]func(e []Entry) []Entry{
		"edit data": func(e []Entry) []Entry { e[2].Data = json.RawMessage(`{"i":99}`); return e },
		"edit kind": func(e []Entry) []Entry { e[1].Kind = KindIntent; return e },
		"edit action": func(e []Entry) []Entry {
			e[3].Action = ActionVerify
			return e
		},
		"edit ref":      func(e []Entry) []Entry { e[1].Ref = 0; return e },
		"edit time":     func(e []Entry) []Entry { e[0].At = e[0].At.Add(time.Millisecond); return e },
		"edit hash":     func(e []Entry) []Entry { e[4].Hash = e[3].Hash; return e },
		"remove first":  func(e []Entry) []Entry { return e[1:] },
		"remove middle": func(e []Entry) []Entry { return append(e[:2:2], e[3:]...) },
		"remove last":   func(e []Entry) []Entry { return e[:len(e)-1] },
		"swap":          func(e []Entry) []Entry { e[1], e[2] = e[2], e[1]; return e },
		"swap renumbered": func(e []Entry) []Entry {
			e[1], e[2] = e[2], e[1]
			e[1].Seq, e[2].Seq = 2, 3
			return e
		},
		"duplicate": func(e []Entry) []Entry { return append(e, e[len(e)-1]) },
		"rechained edit": func(e []Entry) []Entry {
			// An attacker who recomputes the hashes of every later entry is
			// still caught by the head recorded with the run.
			e[2].Data = json.RawMessage(`{"forged":true}`)
			for i := 2; i < len(e); i++ {
				var prev *Entry
				if i > 0 {
					prev = &e[i-1]
				}
				e[i] = chain(testRun, prev, e[i])
			}
			return e
		},
		"other run": func(e []Entry) []Entry {
			other, _, _ := buildChain(len(e))
			for i := range other {
				other[i] = chain("another-run", prevOf(other, i), other[i])
			}
			return other
		},
	}
	for name, fn := range tamper {
		t.Run(name, func(t *testing.T) {
			entries, count, head := buildChain(6)
			s := VerifyJournal(testRun, fn(entries), count, head)
			if s.Valid {
				t.Fatalf("tampering %q not detected", name)
			}
			if s.Problem == "" {
				t.Fatal("no problem reported")
			}
		})
	}
}

func prevOf(e []Entry, i int) *Entry {
	if i == 0 {
		return nil
	}
	return &e[i-1]
}

func TestOpenIntents(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := []Entry{
		{Seq: 1, Kind: KindIntent}, {Seq: 2, Kind: KindReceipt, Ref: 1},
		{Seq: 3, Kind: KindIntent}, {Seq: 4, Kind: KindIntent}, {Seq: 5, Kind: KindReconciliation, Ref: 4},
	}
	is.Equal(openIntents(e), []int{3})
	is.Equal(openIntents(nil), []int{})
}

// FuzzJournalTamper applies an arbitrary edit, removal or reordering to a
// valid chain; any change that alters the stored entries must be detected.
func FuzzJournalTamper(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(2), []byte("x"))
	f.Add(uint8(1), uint8(0), uint8(3), []byte(""))
	f.Add(uint8(2), uint8(4), uint8(4), []byte("{}"))
	f.Add(uint8(3), uint8(5), uint8(0), []byte("1"))
	f.Fuzz(func(t *testing.T, op, a, b uint8, data []byte) {
		entries, count, head := buildChain(6)
		orig := mustJSON(entries)
		i, j := int(a)%len(entries), int(b)%len(entries)
		switch op % 5 {
		case 0: // edit the data of one entry
			if !json.Valid(data) {
				data, _ = json.Marshal(string(data))
			}
			entries[i].Data = data
		case 1: // remove one entry
			entries = append(entries[:i:i], entries[i+1:]...)
		case 2: // move one entry elsewhere
			e := entries[i]
			rest := append(entries[:i:i], entries[i+1:]...)
			entries = append(rest[:j:j], append([]Entry{e}, rest[j:]...)...)
		case 3: // swap two entries
			entries[i], entries[j] = entries[j], entries[i]
		case 4: // edit a sequence number
			entries[i].Seq += int(b) - 128
		}
		s := VerifyJournal(testRun, entries, count, head)
		changed := mustJSON(entries) != orig
		if changed && s.Valid {
			t.Fatalf("op %d (%d,%d) changed the journal undetected", op%5, i, j)
		}
		if !changed && !s.Valid {
			t.Fatalf("unchanged journal reported invalid: %s", s.Problem)
		}
	})
}
