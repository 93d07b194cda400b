package platform_test

import (
	"sort"
	"testing"
)

// tableBytes sums, per table, the bytes of the pages the table and its
// indexes use in bridge.db (SQLite's dbstat).
func tableBytes(b *testing.B, h *harness) map[string]int64 {
	rows, err := h.d.DB.Reader().Query(`SELECT coalesce(m.tbl_name, s.name), sum(s.pgsize) FROM dbstat s LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY 1`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// bytesPerRun is how many bytes bridge.db's tables grew by per run between
// two tableBytes; it logs the tables that grew, largest first, for
// BENCHMARKS.md's storage table.
func bytesPerRun(b *testing.B, before, after map[string]int64) float64 {
	var total int64
	var grew []string
	for name, n := range after {
		if n > before[name] {
			total += n - before[name]
			grew = append(grew, name)
		}
	}
	growth := func(name string) int64 { return after[name] - before[name] }
	sort.Slice(grew, func(i, j int) bool { return growth(grew[i]) > growth(grew[j]) })
	for _, name := range grew {
		b.Logf("%-28s %6.0f B/run", name, float64(growth(name))/float64(b.N))
	}
	return float64(total) / float64(b.N)
}
